#!/usr/bin/env bash
# Builds perf/probe32/kernels: the gathering rows the final rules (361f2f9) give back to the planner's general
# rules, each spec untuned by the working tree under several [schedule] tables (suffix = TOML lines, `;`
# between): RMSNorm → cache RoPE → FP8 (spans of 64 and 128, groups 32, 64, 128 and per token) staged and read
# where used, on the planner's threads and on four warps, and streamed; QK-norm → cache RoPE whose neox pairs
# sit four lanes apart or over part of each head, at 4608 and 6144, on the planner's threads, streamed and on
# four warps under a launch bound of six.
# Run from the repo root: bash perf/probe32/build.sh
set -eu
source perf/proto/probe_build.sh
probe_setup probe32
"$python" - "$work/specs" <<'PY'
import sys
from pathlib import Path

sys.path.insert(0, "perf/proto")
from variant_specs import HEAD_RMS, RMS, cache_rope, write

def quant(group):
    size = '"token"' if group == "token" else group
    return f'[[op]]\nkind = "quant_fp8"\ngroup_size = {size}\n[outputs]\ny = false\n'
CHAINS = {
    "q64g32": ("", RMS + cache_rope(64, "tail", "neox") + quant(32)),
    "q64g128": ("", RMS + cache_rope(64, "head", "gptj") + quant(128)),
    "q128g64": ("", RMS + cache_rope(128, "tail", "neox") + quant(64)),
    "q128g128": ("", RMS + cache_rope(128, "head", "gptj") + quant(128)),
    "q128tok": ("", RMS + cache_rope(128, "head", "neox") + quant("token")),
    "qkn64": ("head_dim = 64\n", HEAD_RMS + cache_rope(64, "head", "neox")),
    "qkt": ("head_dim = 128\n", HEAD_RMS + cache_rope(64, "tail", "neox")),
    "qkh256": ("head_dim = 256\n", HEAD_RMS + cache_rope(128, "head", "neox")),
}
FP8 = {
    "auto": "",
    "np": "prefetch = false",
    "f128": 'variant = "fragment";threads = 128',
    "f128np": 'variant = "fragment";threads = 128;prefetch = false',
    "str": 'variant = "stream"',
}
QKV = {"auto": "", "str": 'variant = "stream"', "b6": 'variant = "fragment";threads = 128;blocks_per_sm = 6'}
SAMPLE = [
    *[(c, d, h, FP8) for c in ("q64g32", "q64g128", "q128g64", "q128g128", "q128tok") for d, h in (("bfloat16", 5120), ("float16", 7168), ("float32", 6144))],
    *[(c, d, h, QKV) for c in ("qkn64", "qkt", "qkh256") for d, h in (("bfloat16", 4608), ("float16", 6144))],
]
write(Path(sys.argv[1]), 32, CHAINS, SAMPLE)
PY
plan_or_drop specs
build_with "$repo" specs
probe_collect
