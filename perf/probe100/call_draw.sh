#!/usr/bin/env bash
# probe100's second device call: a fresh unhinted draw (seed 4302, the specs that pin no token count) at 8, 128
# and 256 tokens against torch.compile, untuned — the few-token target on specs the planner was not fitted on.
set -u
out=${OUT:-/tmp/probe100-draw}
work=$(mktemp -d)
start=$SECONDS
echo '{}' > "$work/no-tuning.json"
timeout $((${BUDGET_S:-560} - 10)) python3 -m fusegen bench perf/probe100/draw --tokens 8 128 256 --baselines compile --no-host-cost \
    --tuning "$work/no-tuning.json" --out-dir "$work/draw" > "$work/draw.log" 2>&1
echo "draw exit $? at $((SECONDS - start)) s"
mkdir -p "$out"
tar -czf "$out/all.tgz" -C "$work" .
grep "^| " "$work/draw/bench.md" | awk -F'|' '$10 != " – " {print $2, $3, $4, $10}' | sort -t' ' -k5 -n | head -30
