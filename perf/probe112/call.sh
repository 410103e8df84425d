#!/usr/bin/env bash
# Session 54's last call (carry .device, perf/probe111/kernels, perf/probe112/kernels), in the order that matters
# when the budget is short. On an H200: probe111's pairs (does the stream still beat the fragment program at two
# to four compiled blocks on the card it was fitted on?), then probe112's fresh pairs (the same question held out).
# On another card: the kept fragment programs' correctness (the new GPU tests, gpu_hunt over probe111's 26 as now
# built), then probe112's pairs.
set -u
out=${OUT:-/tmp/probe112}
mkdir -p "$out"
start=$SECONDS
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "$gpu" | tee "$out/gpu.txt"
left() { echo $((${BUDGET_S:-560} - (SECONDS - start))); }
pairs() {  # $1: probe
    timeout "$(left)" python3 perf/proto/probe_time.py "perf/$1/kernels/time/kernels" "$out/$1-time.json" "${ROUNDS:-3}" \
        > "$out/$1-time.log" 2>&1
    echo "$1 time exit $? at $((SECONDS - start)) s"
    python3 perf/probe111/pairs.py "$out/$1-time.json" "perf/$1/kernels/time/kernels" | tee "$out/$1-pairs.txt" | tail -3
}
if [[ $gpu == *H200* ]]; then
    pairs probe111
else
    python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_fragment_over_stream.py > "$out/pytest.log" 2>&1
    echo "pytest exit $? at $((SECONDS - start)) s"; tail -1 "$out/pytest.log"
    python3 scripts/gpu_hunt.py check perf/probe111/kernels/kept --jobs 8 > "$out/hunt.log" 2>&1
    echo "hunt exit $? at $((SECONDS - start)) s"; tail -1 "$out/hunt.log"; grep -h "FAIL" "$out/hunt.log" | head -5
fi
pairs probe112
