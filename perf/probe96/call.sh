#!/usr/bin/env bash
# probe96's device call (session 41): the NAME_new builds (a bound spilling a few words kept) against their
# references, then every build timed at its sweep count, untuned: NAME_old against NAME_new. Logs and JSON to
# $OUT. ~3 min.
set -u
out=${OUT:-/tmp/probe96}
mkdir -p "$out"
start=$SECONDS
k=perf/probe96/kernels
timeout 150 python3 scripts/gpu_hunt.py check $k/check --jobs 15 > "$out/check.log" 2>&1
echo "check exit $? at $((SECONDS - start)) s"; tail -1 "$out/check.log"; grep -A4 FAIL "$out/check.log" | cut -c1-300 | head -20
timeout $((${BUDGET_S:-300} - (SECONDS - start))) python3 perf/proto/probe_time.py $k/time/kernels "$out/time.json" 3 > "$out/time.log" 2>&1
echo "time exit $? at $((SECONDS - start)) s"
grep -hE "x copy|DIFFER|not timed" "$out/time.log" | sort | head -80
