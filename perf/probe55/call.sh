#!/usr/bin/env bash
# Session 30's device call: the span-tile RoPE cases pending a GPU run (tests/cases.py) through the GPU matrix,
# probe55 (its _new builds against their references, old and new timed), both sanitizers over the pending
# cases, then probe56's held-out sweep timed once with what time is left. Logs and JSON to $OUT.
set -u
out=${OUT:-/tmp/probe55}
mkdir -p "$out"
start=$SECONDS
left() { echo $((${BUDGET_S:-570} - (SECONDS - start))); }
timeout 120 python3 -m pytest -m gpu tests/test_gpu_matrix.py -k span_tiles -q -p no:cacheprovider -n 8 > "$out/matrix.log" 2>&1
echo "matrix exit $? at $((SECONDS - start)) s"; tail -2 "$out/matrix.log"
OUT="$out" ROUNDS=1 BUDGET_S=$(($(left) - 150)) bash perf/probe51/call.sh perf/probe55/kernels
for tool in memcheck racecheck; do
    timeout 70 compute-sanitizer --tool $tool --error-exitcode 9 python3 scripts/gpu_memcheck.py --pending-only > "$out/$tool.log" 2>&1
    echo "$tool exit $? at $((SECONDS - start)) s"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$out/$tool.log" | tail -2
done
mkdir -p "$out/probe56"
timeout "$(left)" python3 perf/proto/probe_time.py perf/probe56/kernels/time/kernels "$out/probe56/time.json" 1 > "$out/probe56/time.log" 2>&1
echo "probe56 exit $? at $((SECONDS - start)) s"
grep -hE "x copy|not timed" "$out/probe56/time.log" | sort | head -60
