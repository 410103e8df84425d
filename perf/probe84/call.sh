#!/usr/bin/env bash
# probe84's device call: a fresh random draw (seed 3901), a per-head hunt (seed 3902) and the pinned pair
# builds against their references; then the pairs and the draw timed at their sweep counts, untuned.
set -u
out=${OUT:-/tmp/probe84}
mkdir -p "$out"
start=$SECONDS
k=perf/probe84/kernels
timeout 200 python3 scripts/gpu_hunt.py check $k/heads $k/draw $k/pair/check --jobs 15 > "$out/check.log" 2>&1
echo "check exit $? at $((SECONDS - start)) s"; grep -c "^ok" "$out/check.log"; grep -A4 FAIL "$out/check.log" | cut -c1-300 | head -30
timeout 200 python3 perf/proto/probe_time.py $k/pair/time/kernels "$out/pair.json" 2 > "$out/pair.log" 2>&1
echo "pair exit $? at $((SECONDS - start)) s"
timeout $((570 - (SECONDS - start))) python3 perf/proto/probe_time.py $k/draw/kernels "$out/draw.json" 2 > "$out/draw.log" 2>&1
echo "draw exit $? at $((SECONDS - start)) s"
grep -hE "x copy|DIFFER|not timed" "$out/pair.log" | sort | head -80
grep -hE "x copy" "$out/draw.log" | awk '{print $(NF-2)}' | sort -n | head -16 | tr '\n' ' '
