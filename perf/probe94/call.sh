#!/usr/bin/env bash
# probe94's device call (built in session 40): the register ring's pending cases (tests/cases.py
# PENDING_GPU_CASES) through the GPU matrix and racecheck, then probe94's `_r`/`_rmax` builds against their
# references and every build timed at its sweep count, untuned. Logs and JSON to $OUT. ~8 min.
set -u
out=${OUT:-/tmp/probe94}
mkdir -p "$out"
start=$SECONDS
timeout 150 python3 -m pytest -m gpu tests/test_gpu_matrix.py -k stream_registers -q -p no:cacheprovider -n 3 > "$out/matrix.log" 2>&1
echo "matrix exit $? at $((SECONDS - start)) s"; tail -2 "$out/matrix.log"
timeout 110 compute-sanitizer --tool racecheck --error-exitcode 9 python3 scripts/gpu_memcheck.py --pending-only > "$out/racecheck.log" 2>&1
echo "racecheck exit $? at $((SECONDS - start)) s"; grep -E "sanitized |RACECHECK SUMMARY|ERROR SUMMARY" "$out/racecheck.log" | tail -8
k=perf/probe94/kernels
timeout 120 python3 scripts/gpu_hunt.py check $k/check --jobs 15 > "$out/check.log" 2>&1
echo "check exit $? at $((SECONDS - start)) s"; tail -1 "$out/check.log"; grep -A4 FAIL "$out/check.log" | cut -c1-300 | head -20
timeout $((${BUDGET_S:-560} - (SECONDS - start))) python3 perf/proto/probe_time.py $k/time/kernels "$out/time.json" 2 > "$out/time.log" 2>&1
echo "time exit $? at $((SECONDS - start)) s"
grep -hE "x copy|DIFFER|not timed" "$out/time.log" | sort | head -120
