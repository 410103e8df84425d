#!/usr/bin/env bash
# probe49's one device call: the narrow-row draw against its references (scripts/gpu_hunt.py), the GPU
# matrix on the pending narrow cases, then the timing set at sweep counts: the rows on a warp each (_old)
# beside rows sharing warps (_new, _r4, _r8). Logs and JSON to $OUT.
set -u
out=${OUT:-/tmp/probe49}
mkdir -p "$out"
start=$SECONDS
k=perf/probe49/kernels
timeout 75 python3 scripts/gpu_hunt.py check $k/hunt --jobs 15 > "$out/hunt.log" 2>&1
echo "hunt exit $? at $((SECONDS - start)) s"; tail -1 "$out/hunt.log"; grep -c '^ok\| ok' "$out/hunt.log"; grep -A4 FAIL "$out/hunt.log" | cut -c1-300 | head -30
timeout 45 python3 -m pytest -q -m gpu tests/test_gpu_matrix.py -k shared_warps -p no:cacheprovider > "$out/matrix.log" 2>&1
echo "matrix exit $? at $((SECONDS - start)) s"; tail -2 "$out/matrix.log"
timeout $((${BUDGET_S:-205} - (SECONDS - start))) python3 perf/proto/probe_time.py $k/time/kernels "$out/time.json" 1 > "$out/time.log" 2>&1
echo "time exit $? at $((SECONDS - start)) s"
grep -E "x copy|DIFFER|not timed" "$out/time.log" | sort | head -120
