#!/usr/bin/env bash
# probe47's one device call: the GPU hunt (random specs against their references), then the held-out
# draw and the 2880-wide variants timed at their sweep counts. Logs and JSON to $OUT.
set -u
out=${OUT:-/tmp/probe47}
mkdir -p "$out"
start=$SECONDS
k=perf/probe47/kernels
timeout 280 python3 scripts/gpu_hunt.py check $k/hunt $k/perf --jobs 12 > "$out/hunt.log" 2>&1
echo "hunt exit $? at $((SECONDS - start)) s"; tail -1 "$out/hunt.log"; grep -A4 FAIL "$out/hunt.log" | cut -c1-400 | head -60
timeout 150 python3 perf/proto/probe_time.py $k/perf/kernels "$out/perf.json" 2 > "$out/perf.log" 2>&1
echo "perf exit $? at $((SECONDS - start)) s"
timeout $((575 - (SECONDS - start))) python3 perf/proto/probe_time.py $k/variants/kernels "$out/variants.json" 3 > "$out/variants.log" 2>&1
echo "variants exit $? at $((SECONDS - start)) s"
grep -E "x copy|not timed" "$out/variants.log" | head -30
