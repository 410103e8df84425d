#!/usr/bin/env bash
# Builds perf/probe39/kernels: LayerNorm over the whole row → neox cache RoPE over heads of 64, the class
# perf/probe37 found spilling under schedule.FEW_WARPS_BOUNDS (0.36–0.40 × copy), each spec untuned under
# several [schedule] tables (suffix = TOML lines, `;` between): the planner's (auto), four warps bounded to
# five, four and three blocks an SM, the stream on the planner's threads and on 256, a fragment on 256.
# Run from the repo root: bash perf/probe39/build.sh
set -eu
source perf/proto/probe_build.sh
probe_setup probe39
"$python" - "$work/specs" <<'PY'
import sys
from pathlib import Path

sys.path.insert(0, "perf/proto")
from variant_specs import cache_rope, write

CHAINS = {"lnrow": ("head_dim = 64\n", '[[op]]\nkind = "layernorm"\n' + cache_rope(64, "head", "neox"))}
VARIANTS = {
    "auto": "",
    "b5": 'variant = "fragment";threads = 128;blocks_per_sm = 5',
    "b4": 'variant = "fragment";threads = 128;blocks_per_sm = 4',
    "b3": 'variant = "fragment";threads = 128;blocks_per_sm = 3',
    "str": 'variant = "stream"',
    "str256": 'variant = "stream";threads = 256',
    "f256": 'variant = "fragment";threads = 256',
}
SAMPLE = [("lnrow", d, h, VARIANTS) for d, h in (("bfloat16", 6144), ("float16", 6656), ("float16", 7168), ("bfloat16", 8192))]
write(Path(sys.argv[1]), 39, CHAINS, SAMPLE)
PY
plan_or_drop specs
build_with "$repo" specs
probe_collect
