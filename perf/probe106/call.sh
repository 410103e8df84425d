#!/usr/bin/env bash
# probe106's device call: the new builds checked against their references, then every pair timed at its sweep
# count in three interleaved rounds (perf/probe51/call.sh), then at 8 tokens, where the planner's few-token route
# holds each row on one warp of 32 threads and changes the same way.
set -u
out=${OUT:-/tmp/probe106}
k=perf/probe106/kernels
# The new builds to check are the timed ones; they travel once (the carry limit) and are copied here.
mkdir -p $k/check/kernels && cp -r $k/time/kernels/*_new $k/check/kernels/
OUT=$out ROUNDS=3 CHECK_S=${CHECK_S:-150} BUDGET_S=${BUDGET_S:-430} bash perf/probe51/call.sh $k
PROBE_TOKENS=8 timeout "${FEW_S:-110}" python3 perf/proto/probe_time.py $k/time/kernels "$out/time_8.json" 3 > "$out/time_8.log" 2>&1
echo "time_8 exit $?"
grep -hE "x copy|DIFFER|not timed" "$out/time_8.log" | sort | head -80
