#!/usr/bin/env bash
# Builds perf/probe41/kernels: rows past the launch bound's register fit (schedule._few_warps_bound) — norm
# over the whole row → neox cache RoPE over heads of 64 — as the planner has them (`auto`: streamed, or four
# warps under the most blocks that hold them) and with weight and bias read where used (`np`: nothing staged,
# so the bound of six or five holds), each untuned.
# Run from the repo root: bash perf/probe41/build.sh
set -eu
source perf/proto/probe_build.sh
probe_setup probe41
"$python" - "$work/specs" <<'PY'
import sys
from pathlib import Path

sys.path.insert(0, "perf/proto")
from variant_specs import RMS, cache_rope, write

ROPE = cache_rope(64, "head", "neox")
CHAINS = {"lnrow": ("head_dim = 64\n", '[[op]]\nkind = "layernorm"\n' + ROPE), "rmsrow": ("head_dim = 64\n", RMS + ROPE)}
VARIANTS = {"auto": "", "np": "prefetch = false"}
SAMPLE = [
    *[("lnrow", d, h, VARIANTS) for d, h in (("bfloat16", 6144), ("float16", 6656), ("float16", 7168), ("float16", 7680), ("bfloat16", 8192))],
    ("rmsrow", "bfloat16", 7168, VARIANTS),
]
write(Path(sys.argv[1]), 41, CHAINS, SAMPLE)
PY
plan_or_drop specs
build_with "$repo" specs
probe_collect
