#!/usr/bin/env bash
# probe98's device call: the planner's plain rows against torch.compile at 128 and 256 tokens, then every
# variant (planner, 2x and 4x threads) in one run without baselines, so the variants compare in one process.
set -u
out=${OUT:-/tmp/probe98}
mkdir -p "$out"
start=$SECONDS
echo '{}' > "$out/no-tuning.json"
mkdir -p "$out/planner"
cp perf/probe98/specs/*_p.toml "$out/planner/"
timeout 300 python3 -m fusegen bench perf/probe98/specs --tokens 128 256 --baselines --no-host-cost \
    --tuning "$out/no-tuning.json" --out-dir "$out/variants" > "$out/variants.log" 2>&1
echo "variants exit $? at $((SECONDS - start)) s"
timeout $((${BUDGET_S:-540} - (SECONDS - start))) python3 -m fusegen bench "$out/planner" --tokens 128 256 --baselines compile \
    --no-host-cost --tuning "$out/no-tuning.json" --out-dir "$out/compile" > "$out/compile.log" 2>&1
echo "compile exit $? at $((SECONDS - start)) s"
