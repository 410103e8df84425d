#!/usr/bin/env bash
# Builds perf/probe29/kernels: what perf/probe28 left open about the gathering-row rules (cc7503a), each
# spec untuned by the working tree under several [schedule] tables (suffix = TOML lines, `;` between):
# QK-norm → cache RoPE whose neox pairs swap by warp shuffle (heads of 64, or a 64-column span in heads of
# 128: 168 registers on four warps), on four warps with and without a launch bound, on 256 and streamed;
# RMSNorm → cache RoPE → FP8 and LayerNorm → cache RoPE read where used (auto) against staged (and streamed).
# Run from the repo root: bash perf/probe29/build.sh
set -eu
source perf/proto/probe_build.sh
probe_setup probe29
"$python" - "$work/specs" <<'PY'
import sys
from pathlib import Path

sys.path.insert(0, "perf/proto")
from variant_specs import HEAD_RMS, RMS, cache_rope, write

CHAINS = {
    "qkn64": ("head_dim = 64\n", HEAD_RMS + cache_rope(64, "head", "neox")),
    "qkt": ("head_dim = 128\n", HEAD_RMS + cache_rope(64, "tail", "neox")),
    "rcq": ("", RMS + cache_rope(128, "head", "neox") + '[[op]]\nkind = "quant_fp8"\ngroup_size = "token"\n[outputs]\ny = false\n'),
    "rcq128": ("", RMS + cache_rope(64, "tail", "gptj") + '[[op]]\nkind = "quant_fp8"\ngroup_size = 128\n[outputs]\ny = false\n'),
    "lnc": ("", '[[op]]\nkind = "layernorm"\n' + cache_rope(64, "tail", "neox")),
}
STAGING = {"auto": "", "pf": "prefetch = true"}
SHUFFLED = {
    "auto": "",
    "b5": 'variant = "fragment";threads = 128;blocks_per_sm = 5',
    "b6": 'variant = "fragment";threads = 128;blocks_per_sm = 6',
    "t256": 'variant = "fragment";threads = 256',
    "str": 'variant = "stream"',
}
SAMPLE = [
    *[(c, d, h, SHUFFLED) for c in ("qkn64", "qkt") for d, h in (("bfloat16", 4608), ("bfloat16", 6144), ("bfloat16", 8192), ("float16", 7168), ("float32", 6144), ("float32", 8192))],
    *[(c, d, h, STAGING) for c, d, h in (("rcq", "float32", 5120), ("rcq", "float32", 7168), ("rcq128", "float32", 4096), ("rcq", "bfloat16", 5120), ("rcq128", "bfloat16", 7168), ("rcq", "float16", 6144), ("rcq128", "float16", 4096))],
    *[(c, d, h, STAGING | {"str": 'variant = "stream"'}) for c, d, h in (("lnc", "bfloat16", 3072), ("lnc", "bfloat16", 5120), ("lnc", "bfloat16", 7168), ("lnc", "float32", 3584), ("lnc", "float32", 7168))],
]
write(Path(sys.argv[1]), 29, CHAINS, SAMPLE)
PY
plan_or_drop specs
build_with "$repo" specs
probe_collect
