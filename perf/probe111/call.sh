#!/usr/bin/env bash
# One device call for session 53's two open questions (carry .device, perf/probe109/kernels, perf/probe111/kernels):
# probe109 again on its rebuilt kernels (rows sharing threads with their row loads clamped: check, bits, times), then
# probe111's pairs (the planner's stream against the fragment program it replaces). ~5 minutes on the H200.
set -u
out=${OUT:-/tmp/probe111}
mkdir -p "$out/probe109" "$out/probe111"
start=$SECONDS
CHECK_S=${CHECK_S:-90} BUDGET_S=${PROBE109_S:-300} OUT="$out/probe109" bash perf/probe109/call.sh
python3 perf/probe109/rows.py "$out/probe109/time.json" | tee "$out/probe109/rows.txt" | tail -14
timeout $((${BUDGET_S:-560} - (SECONDS - start))) python3 perf/proto/probe_time.py perf/probe111/kernels/time/kernels \
    "$out/probe111/time.json" "${ROUNDS:-3}" > "$out/probe111/time.log" 2>&1
echo "probe111 time exit $? at $((SECONDS - start)) s"
grep -h "not timed" "$out/probe111/time.log"
python3 perf/probe111/pairs.py "$out/probe111/time.json" | tee "$out/probe111/pairs.txt"
