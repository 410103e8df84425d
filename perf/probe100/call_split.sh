#!/usr/bin/env bash
# probe100's split calls: the few-token split of rows no norm reduces in parts of 1 KB where the planner took
# 3 KB (NAME_new) against the planner's (NAME_old) — the fit set (kernels/split) and the held-out one
# (PROBE_KERNELS=perf/probe100/kernels/held): the new builds against their references, then both at 1, 8 and 64
# tokens in interleaved rounds (perf/proto/probe_time.py). Logs and JSON straight to $OUT (a cut-short call
# keeps what it wrote).
set -u
out=${OUT:-/tmp/probe100-split}
k=${PROBE_KERNELS:-perf/probe100/kernels/split}
mkdir -p "$out"
start=$SECONDS
timeout 60 python3 scripts/gpu_hunt.py check $k/check --jobs 15 > "$out/check.log" 2>&1
echo "check exit $? at $((SECONDS - start)) s"; tail -1 "$out/check.log"; grep -A4 FAIL "$out/check.log" | cut -c1-300 | head -20
for tokens in 1 8 64; do
    PROBE_TOKENS=$tokens timeout 45 python3 perf/proto/probe_time.py $k/time/kernels "$out/time_$tokens.json" "${ROUNDS:-3}" \
        > "$out/time_$tokens.log" 2>&1
    echo "time $tokens exit $? at $((SECONDS - start)) s"
done
