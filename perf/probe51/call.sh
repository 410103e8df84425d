#!/usr/bin/env bash
# probe51's device call, and any probe's that builds DIR/check and DIR/time (probes 52, 91, 94, 96, 97, with
# their kernels as the argument): the builds in DIR/check against their references (scripts/gpu_hunt.py), then
# every build in DIR/time timed at its sweep count, untuned, ROUNDS rounds. Logs and JSON to $OUT.
set -u
out=${OUT:-/tmp/probe51}
mkdir -p "$out"
start=$SECONDS
k=${1:-perf/probe51/kernels}
timeout 170 python3 scripts/gpu_hunt.py check $k/check --jobs 15 > "$out/check.log" 2>&1
echo "check exit $? at $((SECONDS - start)) s"; tail -1 "$out/check.log"; grep -A4 FAIL "$out/check.log" | cut -c1-300 | head -30
timeout $((${BUDGET_S:-560} - (SECONDS - start))) python3 perf/proto/probe_time.py $k/time/kernels "$out/time.json" "${ROUNDS:-2}" > "$out/time.log" 2>&1
echo "time exit $? at $((SECONDS - start)) s"
grep -hE "x copy|DIFFER|not timed" "$out/time.log" | sort | head -120
