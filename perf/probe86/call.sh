#!/usr/bin/env bash
# probe86's device call (session 40): the new builds against their references, then every build timed at
# its sweep count, untuned. Logs and JSON to $OUT. ~3 min.
set -u
out=${OUT:-/tmp/probe86}
mkdir -p "$out"
start=$SECONDS
k=perf/probe86/kernels
timeout 200 python3 scripts/gpu_hunt.py check $k/reread/check $k/stats/check --jobs 15 > "$out/check.log" 2>&1
echo "check exit $? at $((SECONDS - start)) s"; tail -1 "$out/check.log"; grep -A4 FAIL "$out/check.log" | cut -c1-300 | head -30
for family in reread stats; do
    timeout 150 python3 perf/proto/probe_time.py $k/$family/time/kernels "$out/$family.json" "${ROUNDS:-2}" > "$out/$family.log" 2>&1
    echo "$family exit $? at $((SECONDS - start)) s"
done
grep -hE "x copy|DIFFER|not timed" "$out/reread.log" "$out/stats.log" | sort | head -60
