#!/usr/bin/env bash
# probe61's device call: a full `fusegen tune` (every candidate, untuned start) of the worst rows left — five
# held-out ones of probe58/59 and the sweep's three under 0.90 — one spec at a time in file order, each into
# $OUT/<spec>/ (tune.json, tune.md), while the budget lasts.
set -u
out=${OUT:-/tmp/probe61}
mkdir -p "$out"
start=$SECONDS
echo '{}' > "$out/tuning.json"
for spec in perf/probe61/specs/*.toml; do
    left=$((${BUDGET_S:-540} - (SECONDS - start)))
    if (( left < 60 )); then echo "stopped before $spec"; break; fi
    name=$(basename "$spec" .toml)
    timeout "$left" python3 -m fusegen tune "$spec" --jobs 16 --tuning "$out/tuning.json" --out-dir "$out/$name" > "$out/$name.log" 2>&1
    echo "$name exit $? at $((SECONDS - start)) s"
done
