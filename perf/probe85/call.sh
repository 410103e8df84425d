#!/usr/bin/env bash
# probe85's device call: the new builds (bounds lowered) and the three pinned builds perf/probe84's check
# did not reach, against their references; then old and new builds timed at their sweep counts, untuned.
set -u
out=${OUT:-/tmp/probe85}
mkdir -p "$out"
start=$SECONDS
k=perf/probe85/kernels
timeout 240 python3 scripts/gpu_hunt.py check $k/check $k/left --jobs 15 > "$out/check.log" 2>&1
echo "check exit $? at $((SECONDS - start)) s"; grep -c ": ok$" "$out/check.log"; grep -A4 FAIL "$out/check.log" | cut -c1-300 | head -30
timeout $((560 - (SECONDS - start))) python3 perf/proto/probe_time.py $k/time/kernels "$out/time.json" "${ROUNDS:-2}" > "$out/time.log" 2>&1
echo "time exit $? at $((SECONDS - start)) s"
grep -hE "x copy|DIFFER|not timed" "$out/time.log" | sort | head -80
