#!/usr/bin/env bash
# probe50's second device call: the two rules' new plans against their references (scripts/gpu_hunt.py, the
# changed specs' _new builds), then old against new and the column-scale twins timed at sweep counts.
set -u
out=${OUT:-/tmp/probe50}
mkdir -p "$out"
start=$SECONDS
k=perf/probe50/kernels
timeout 150 python3 scripts/gpu_hunt.py check $k/check --jobs 15 > "$out/check.log" 2>&1
echo "check exit $? at $((SECONDS - start)) s"; tail -1 "$out/check.log"; grep -A4 FAIL "$out/check.log" | cut -c1-300 | head -30
timeout $((${BUDGET_S:-400} - (SECONDS - start))) python3 perf/proto/probe_time.py $k/rules/kernels "$out/rules.json" 2 > "$out/rules.log" 2>&1
echo "rules exit $? at $((SECONDS - start)) s"
grep -hE "x copy|DIFFER|not timed" "$out/rules.log" | sort | head -80
