#!/usr/bin/env bash
# probe68's device call: every doubled-thread stream checked against its reference (scripts/gpu_hunt.py),
# then every build timed at its sweep count, two interleaved rounds. Logs and JSON to $OUT.
set -u
out=${OUT:-/tmp/probe68}
mkdir -p "$out"
start=$SECONDS
k=perf/probe68/kernels
timeout 170 python3 scripts/gpu_hunt.py check $k/check --jobs 15 > "$out/check.log" 2>&1
echo "check exit $? at $((SECONDS - start)) s"; tail -1 "$out/check.log"; grep -A4 FAIL "$out/check.log" | cut -c1-300 | head -30
timeout $((${BUDGET_S:-500} - (SECONDS - start))) python3 perf/proto/probe_time.py $k/time/kernels "$out/time.json" "${ROUNDS:-2}" > "$out/time.log" 2>&1
echo "time exit $? at $((SECONDS - start)) s"
grep -hE "x copy|not timed" "$out/time.log" | sort | head -80
