#!/usr/bin/env bash
# probe91's device call (session 40): the padded-stream cases of tests/cases.py (PENDING_GPU_CASES) against
# their references at the GPU matrix's counts and under racecheck (the ring's slots refilled by per-thread
# copies while other rows are read), then probe91's stream builds checked and every pair timed, then
# memcheck of the pending cases in what time is left. Logs to $OUT.
set -u
out=${OUT:-/tmp/probe91}
mkdir -p "$out"
start=$SECONDS
timeout 150 python3 -m pytest -m gpu tests/test_gpu_matrix.py -k stream_padded -q -p no:cacheprovider -n 3 > "$out/matrix.log" 2>&1
echo "matrix exit $? at $((SECONDS - start)) s"; tail -2 "$out/matrix.log"
timeout 110 compute-sanitizer --tool racecheck --error-exitcode 9 python3 scripts/gpu_memcheck.py --pending-only > "$out/racecheck.log" 2>&1
echo "racecheck exit $? at $((SECONDS - start)) s"; grep -E "sanitized |RACECHECK SUMMARY|ERROR SUMMARY" "$out/racecheck.log" | tail -8
k=perf/probe91/kernels
timeout 80 python3 scripts/gpu_hunt.py check $k/check --jobs 15 > "$out/check.log" 2>&1
echo "check exit $? at $((SECONDS - start)) s"; tail -1 "$out/check.log"; grep -A4 FAIL "$out/check.log" | cut -c1-300 | head -20
timeout $((${BUDGET_S:-440} - 50 - (SECONDS - start))) python3 perf/proto/probe_time.py $k/time/kernels "$out/time.json" 2 > "$out/time.log" 2>&1
echo "time exit $? at $((SECONDS - start)) s"
grep -hE "x copy|DIFFER|not timed" "$out/time.log" | sort | head -40
left=$((${BUDGET_S:-440} - (SECONDS - start)))
if [ "$left" -gt 40 ]; then
    timeout "$left" compute-sanitizer --tool memcheck --error-exitcode 9 python3 scripts/gpu_memcheck.py --pending-only > "$out/memcheck.log" 2>&1
    echo "memcheck exit $? at $((SECONDS - start)) s"; grep -E "sanitized |ERROR SUMMARY" "$out/memcheck.log" | tail -5
fi
