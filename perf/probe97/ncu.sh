#!/usr/bin/env bash
# probe97's second device call: ncu of the high-issue-ratio rows that write row-major scales (probe97's 262 and
# 094, probe94's 017 and 037) and one fast low-ratio row (probe97's 012) at 16384 tokens: where their time goes.
set -u
out=${OUT:-/tmp/probe97-ncu}
mkdir -p "$out"
sections="--section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section LaunchStats --section MemoryWorkloadAnalysis"
TOKENS=16384 timeout 200 ncu $sections --csv --page details -c 6 \
    python3 perf/proto/ncu_rows.py perf/probe97/kernels/time/kernels hunt_4201_262_p hunt_4201_094_p hunt_4201_012_p > "$out/probe97.csv" 2> "$out/probe97.err"
echo "probe97 rows exit $?"
TOKENS=16384 timeout 150 ncu $sections --csv --page details -c 4 \
    python3 perf/proto/ncu_rows.py perf/probe94/kernels/time/kernels hunt_3901_017_p hunt_3901_037_p > "$out/probe94.csv" 2> "$out/probe94.err"
echo "probe94 rows exit $?"
wc -l "$out"/*.csv
