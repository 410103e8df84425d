#!/usr/bin/env bash
# Session 9: `fusegen tune --quick` (which now times the planner's schedule under its tightest launch bounds
# first) of the sweep specs that the recorded sweep (docs/bench/sweep/sweep.md) has under 0.90 × copy, then
# those specs at their sweep counts with the winners, and untuned, one bench run each. Results in $OUT.
set -u
out=${OUT:-/tmp/tune-below}
mkdir -p "$out"
start=$SECONDS
specs=$(sed -n 's/^| \(\(sweep\|issue\)_[a-z0-9_]*\) | .* | \(0\.[0-8][0-9]\) | .*/perf\/sweep\/\1.toml/p' docs/bench/sweep/sweep.md)
echo "$specs" | wc -l
echo '{}' > "$out/no-tuning.json"
# shellcheck disable=SC2086
timeout 380 python3 -m fusegen tune $specs --quick --tuning "$out/tuning-quick.json" --out-dir "$out/tune-quick" > "$out/tune-quick.log" 2>&1
echo "quick tune exit $? at $((SECONDS - start)) s"
# shellcheck disable=SC2086
timeout 80 python3 -m fusegen bench $specs --tokens 8 --sweep-tokens --baselines-up-to 1 --no-host-cost \
    --tuning "$out/tuning-quick.json" --out-dir "$out/sweep-tuned" > "$out/bench-tuned.log" 2>&1
echo "bench tuned exit $? at $((SECONDS - start)) s"
# shellcheck disable=SC2086
timeout 80 python3 -m fusegen bench $specs --tokens 8 --sweep-tokens --baselines-up-to 1 --no-host-cost \
    --tuning "$out/no-tuning.json" --out-dir "$out/sweep-untuned" > "$out/bench-untuned.log" 2>&1
echo "bench untuned exit $? at $((SECONDS - start)) s"
