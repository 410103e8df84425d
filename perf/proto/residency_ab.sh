#!/usr/bin/env bash
# Session 9's A/B device call: every spec whose CUDA the generalized fragment launch bound changes
# (schedule.with_fragment_residency: squeezed_blocks) against hinted copies in perf/sweep-ab2 holding the
# previous planner's bound (_old) and, where ptxas reported spills under the new bound, one block fewer.
# One bench run, untuned, at each spec's sweep count and 16384 tokens. Results in $OUT.
set -u
out=${OUT:-/tmp/ab2}
mkdir -p "$out"
start=$SECONDS
echo '{}' > "$out/no-tuning.json"
# shellcheck disable=SC2046  # the source list splits into words
timeout 520 python3 -m fusegen bench $(sed -n 's/^# hinted copy of \([^ ]*\) .*/\1/p' perf/sweep-ab2/*.toml | sort -u) perf/sweep-ab2 \
    --tokens 16384 --sweep-tokens --baselines-up-to 1 --no-host-cost --tuning "$out/no-tuning.json" --out-dir "$out/ab" \
    > "$out/bench-ab.log" 2>&1
echo "ab bench exit $? at $((SECONDS - start)) s"
