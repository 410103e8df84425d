#!/usr/bin/env bash
# probe60's device call: the committed sweep's and the model library's pairs (and four 64-thread 2880-column
# builds, unpaired), then the held-out draws' pairs, each timed at its sweep count, one round, every NAME_old
# and NAME_new first compared bit for bit (perf/proto/probe_time.py); a second round of the first group with
# the time left. Logs and JSON to $OUT.
set -u
out=${OUT:-/tmp/probe60}
mkdir -p "$out"
start=$SECONDS
k=perf/probe60/kernels/split
timeout 300 python3 perf/proto/probe_time.py $k/sweep/kernels "$out/sweep.json" 1 > "$out/sweep.log" 2>&1
echo "sweep exit $? at $((SECONDS - start)) s"
timeout $((480 - (SECONDS - start))) python3 perf/proto/probe_time.py $k/held/kernels "$out/held.json" 1 > "$out/held.log" 2>&1
echo "held exit $? at $((SECONDS - start)) s"
timeout $((${BUDGET_S:-570} - (SECONDS - start))) python3 perf/proto/probe_time.py $k/sweep/kernels "$out/sweep2.json" 1 > "$out/sweep2.log" 2>&1
echo "sweep2 exit $? at $((SECONDS - start)) s"
grep -hE "DIFFER|not timed|Error|error" "$out"/*.log | sort | uniq | head -20
