#!/usr/bin/env bash
# probe79's device call: the per-head hunt (seed 3778) and a fresh random draw (seed 3801) against their
# references, the short gathering rows' r2 builds too; then the draw and the short rows at one, two and four
# rows a block timed at their sweep counts, and MLA kv_a's three at 16384 tokens (issue 14's count).
set -u
out=${OUT:-/tmp/probe79}
mkdir -p "$out"
start=$SECONDS
k=perf/probe79/kernels
timeout 200 python3 scripts/gpu_hunt.py check $k/heads $k/draw $k/rows/check --jobs 15 > "$out/check.log" 2>&1
echo "check exit $? at $((SECONDS - start)) s"; grep -c "^ok" "$out/check.log"; grep -A4 FAIL "$out/check.log" | cut -c1-300 | head -30
timeout 140 python3 perf/proto/probe_time.py $k/rows/time/kernels "$out/rows.json" 2 > "$out/rows.log" 2>&1
echo "rows exit $? at $((SECONDS - start)) s"
PROBE_TOKENS=16384 timeout 40 python3 perf/proto/probe_time.py $k/kv16k "$out/kv16k.json" 3 > "$out/kv16k.log" 2>&1
echo "kv16k exit $? at $((SECONDS - start)) s"
timeout $((570 - (SECONDS - start))) python3 perf/proto/probe_time.py $k/draw/kernels "$out/draw.json" 2 > "$out/draw.log" 2>&1
echo "draw exit $? at $((SECONDS - start)) s"
grep -hE "x copy|DIFFER|not timed" "$out/rows.log" "$out/kv16k.log" | sort | head -80
grep -hE "x copy" "$out/draw.log" | awk '{print $(NF-2)}' | sort -n | head -12 | tr '\n' ' '
