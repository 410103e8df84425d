#!/usr/bin/env bash
# Session 10's fifth device call (issue 16): below 1025 tokens the planner now runs one row per block where
# many tokens stream. The GPU matrix case it changes, and the two 512-column sweep specs at 1 … 1024 tokens
# against torch.compile. Results in $OUT. Run from the repo root with tilelang importable.
default_out=/tmp/stream-few
source perf/proto/device_prologue.sh
FUSEGEN_GPU_REPORT="$out/stream-report.json" timeout 120 python3 -m pytest -m gpu tests/test_gpu_matrix.py -k "rope_tail_neox_64_n512" \
    -q -p no:cacheprovider -n 4 > "$out/stream-tests.log" 2>&1
echo "stream tests exit $? at $((SECONDS - start)) s"; tail -2 "$out/stream-tests.log"
pack
timeout 200 python3 -m fusegen bench perf/sweep/sweep_rms_f16_512.toml perf/sweep/sweep_ln_bf16_512.toml --tokens 1 8 64 256 1024 2048 \
    --baselines compile --no-host-cost --tuning "$out/no-tuning.json" --out-dir "$out/stream-few" > "$out/bench-stream-few.log" 2>&1
echo "stream few exit $? at $((SECONDS - start)) s"
pack
