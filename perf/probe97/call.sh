#!/usr/bin/env bash
# probe97's device call (session 41): the NAME_r builds (the register ring at the most blocks ptxas fits) against their
# references, then every build timed at its sweep count, untuned: NAME_p against NAME_r. Logs and JSON to
# $OUT. ~3 min.
set -u
out=${OUT:-/tmp/probe97}
mkdir -p "$out"
start=$SECONDS
k=perf/probe97/kernels
timeout 150 python3 scripts/gpu_hunt.py check $k/check --jobs 15 > "$out/check.log" 2>&1
echo "check exit $? at $((SECONDS - start)) s"; tail -1 "$out/check.log"; grep -A4 FAIL "$out/check.log" | cut -c1-300 | head -20
timeout $((${BUDGET_S:-300} - (SECONDS - start))) python3 perf/proto/probe_time.py $k/time/kernels "$out/time.json" 3 > "$out/time.log" 2>&1
echo "time exit $? at $((SECONDS - start)) s"
grep -hE "x copy|DIFFER|not timed" "$out/time.log" | sort | head -80
