#!/usr/bin/env bash
# probe103's device call: a fresh unhinted draw (scripts/gpu_hunt.py, seed 4501, 64 specs the planner was not
# fitted on) built untuned, checked against its references at every route's counts, then timed untuned at
# its sweep count (M = max(16384, 2^26 / hidden)) against the copy ceiling and at 256 tokens against
# torch.compile in the time left: where the planner's own schedules stand on specs nobody has seen.
set -u
out=${OUT:-/tmp/probe103}
budget=${BUDGET_S:-560}
mkdir -p "$out"
work=$(mktemp -d)
start=$SECONDS
echo '{}' > "$work/no-tuning.json"
(cd perf/probe103/draw && python3 -m fusegen build specs --out kernels --jobs 16 --tuning "$work/no-tuning.json" > "$work/build.log" 2>&1)
echo "build exit $? at $((SECONDS - start)) s"
python3 scripts/gpu_hunt.py check perf/probe103/draw > "$work/hunt-check.log" 2>&1
echo "check exit $? at $((SECONDS - start)) s: $(grep -c ': ok$' "$work/hunt-check.log") ok"
grep -v ': ok$' "$work/hunt-check.log" | head -20
python3 -m fusegen bench perf/probe103/draw/specs --tokens 8 --sweep-tokens --baselines-up-to 1 --no-host-cost \
    --tuning "$work/no-tuning.json" --out-dir "$work/wide" > "$work/wide.log" 2>&1
echo "wide bench exit $? at $((SECONDS - start)) s"
tar -czf "$out/all.tgz" -C "$work" .
timeout $((budget - (SECONDS - start) - 10)) python3 -m fusegen bench perf/probe103/draw/specs --tokens 256 --baselines compile \
    --no-host-cost --tuning "$work/no-tuning.json" --out-dir "$work/few" > "$work/few.log" 2>&1
echo "256-token bench exit $? at $((SECONDS - start)) s"
rm -rf perf/probe103/draw/kernels/*/__pycache__
tar -czf "$out/all.tgz" -C "$work" .
