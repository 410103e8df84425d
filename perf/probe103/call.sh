#!/usr/bin/env bash
# probe103's device call: a fresh unhinted draw (scripts/gpu_hunt.py, seed 4501, 64 specs the planner was not
# fitted on) built untuned, checked against its references at every route's counts, then timed untuned at
# its sweep count (M = max(16384, 2^26 / hidden)) against the copy ceiling and at 256 tokens against
# torch.compile in the time left: where the planner's own schedules stand on specs nobody has seen.
# DRAW: another draw's directory (its specs/ then kernels/ there), e.g. perf/probe119/draw; BUDGET_S below 560
# leaves out the 256-token comparison once the wide bench has used it up.
set -u
draw=${DRAW:-perf/probe103/draw}
out=${OUT:-/tmp/probe103}
budget=${BUDGET_S:-560}
mkdir -p "$out"
work=$(mktemp -d)
start=$SECONDS
echo '{}' > "$work/no-tuning.json"
(cd "$draw" && python3 -m fusegen build specs --out kernels --jobs 16 --tuning "$work/no-tuning.json" > "$work/build.log" 2>&1)
echo "build exit $? at $((SECONDS - start)) s"
python3 scripts/gpu_hunt.py check "$draw" > "$work/hunt-check.log" 2>&1
echo "check exit $? at $((SECONDS - start)) s: $(grep -c ': ok$' "$work/hunt-check.log") ok"
grep -v ': ok$' "$work/hunt-check.log" | head -20
cp "$work/hunt-check.log" "$out/"  # kept if the call's limit cuts the benches short
python3 -m fusegen bench "$draw/specs" --tokens 8 --sweep-tokens --baselines-up-to 1 --no-host-cost \
    --tuning "$work/no-tuning.json" --out-dir "$work/wide" > "$work/wide.log" 2>&1
echo "wide bench exit $? at $((SECONDS - start)) s"
tar -czf "$out/all.tgz" -C "$work" .
cp "$work/wide/bench.md" "$out/" 2>/dev/null
left=$((budget - (SECONDS - start) - 10))
if ((left > 30)); then  # `timeout 0` would mean no limit at all
    timeout "$left" python3 -m fusegen bench "$draw/specs" --tokens 256 --baselines compile \
        --no-host-cost --tuning "$work/no-tuning.json" --out-dir "$work/few" > "$work/few.log" 2>&1
fi
echo "256-token bench exit $? at $((SECONDS - start)) s"
rm -rf "$draw"/kernels/*/__pycache__
tar -czf "$out/all.tgz" -C "$work" .
