#!/usr/bin/env bash
# probe95's device call: `fusegen tune --quick` (10 candidates, two of them register-ring streams) of the 13
# rows perf/probe94 timed under 0.93 × copy, half a, then half b while the budget lasts, each into
# $OUT/<half>/ (tune.json, tune.md, the log) with one tuning file. ~8 min.
set -u
out=${OUT:-/tmp/probe95}
mkdir -p "$out"
start=$SECONDS
echo '{}' > "$out/tuning.json"
for half in ${HALVES:-a b}; do
    left=$((${BUDGET_S:-560} - (SECONDS - start)))
    if (( left < 90 )); then echo "stopped before half $half"; break; fi
    timeout "$left" python3 -m fusegen tune perf/probe95/specs/$half --quick --jobs 16 --tuning "$out/tuning.json" \
        --out-dir "$out/$half" > "$out/$half.log" 2>&1
    echo "half $half exit $? at $((SECONDS - start)) s"; tail -3 "$out/$half.log" | cut -c1-200
done
