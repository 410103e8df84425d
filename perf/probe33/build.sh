#!/usr/bin/env bash
# Builds perf/probe33/kernels: issue 14's two short gathering rows under 0.92 × copy (DeepSeek-V3 MLA kv_a,
# 576 bf16 columns; Qwen3-8B k, 1024 bf16 columns in heads of 128), each model spec untuned by the working
# tree under several [schedule] tables: the planner's, read where used, two and four rows a block (staged and
# read where used), two warps a row read where used, and the stream.
# Run from the repo root: bash perf/probe33/build.sh; time at issue 14's count with PROBE_TOKENS=16384.
set -eu
source perf/proto/probe_build.sh
probe_setup probe33
"$python" - "$work/specs" <<'PY'
import re
import sys
from pathlib import Path

VARIANTS = {
    "auto": "",
    "np": "prefetch = false",
    "bm2": "block_m = 2",
    "bm2np": "block_m = 2;prefetch = false",
    "bm4np": "block_m = 4;prefetch = false",
    "t64np": 'variant = "fragment";threads = 64;prefetch = false',
    "str": 'variant = "stream"',
}
out = Path(sys.argv[1])
out.mkdir()
for model, short in (("deepseek-v3-mla-kv-a", "kv_a"), ("qwen3-8b-k", "qwen3_k")):
    text = Path(f"specs/models/{model}.toml").read_text()
    for suffix, schedule in VARIANTS.items():
        name = f"p33_{short}_{suffix}"
        renamed = re.sub(r'^name = "[^"]*"', f'name = "{name}"', text, count=1, flags=re.M)
        table = "\n[schedule]\n" + schedule.replace(";", "\n") + "\n" if schedule else ""
        (out / f"{name}.toml").write_text(renamed + table)
PY
plan_or_drop specs
build_with "$repo" specs
probe_collect
