#!/usr/bin/env bash
# Session 54's call (carry .device and perf/probe111/kernels): the fragment programs the build now keeps over
# wide_stream's streams, checked on the GPU — the new GPU tests, and probe111's 26 specs as `fusegen build` now
# builds them (kernels/kept: eight keep the fragment program) run at every program's counts by gpu_hunt — then,
# on an H200 only, the pairs timed again: the H100 left open whether the fragment program beats the stream at
# two to four compiled blocks on the card the stream was fitted on.
set -u
out=${OUT:-/tmp/probe111-2}
mkdir -p "$out"
start=$SECONDS
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "$gpu" | tee "$out/gpu.txt"
python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_fragment_over_stream.py > "$out/pytest.log" 2>&1
echo "pytest exit $? at $((SECONDS - start)) s"; tail -2 "$out/pytest.log"
python3 scripts/gpu_hunt.py check perf/probe111/kernels/kept --jobs 8 > "$out/hunt.log" 2>&1
echo "hunt exit $? at $((SECONDS - start)) s"; grep -c "ok$" "$out/hunt.log"; grep -h "FAIL" "$out/hunt.log" | head -5
if [[ $gpu == *H200* ]]; then
    timeout $((${BUDGET_S:-560} - (SECONDS - start))) python3 perf/proto/probe_time.py perf/probe111/kernels/time/kernels \
        "$out/time.json" "${ROUNDS:-3}" > "$out/time.log" 2>&1
    echo "probe111 time exit $? at $((SECONDS - start)) s"
    python3 perf/probe111/pairs.py "$out/time.json" | tee "$out/pairs.txt"
fi
