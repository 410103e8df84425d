#!/usr/bin/env bash
# Session 13's last device call (issue 16): the sweep untuned at its M (scripts/gpu_sweep.sh's first
# bench, without the small-token torch.compile part, which the time left does not hold), then the
# executed-instruction census (perf/proto/call_s13_census.sh). Run from the repo root with tilelang
# importable; everything comes back in $OUT/results.tar.gz.
set -u
out=${OUT:-/tmp/s13sweep}
work=$(mktemp -d)
start=$SECONDS
echo '{}' > "$work/no-tuning.json"
timeout 300 python3 -m fusegen bench perf/sweep --tokens 8 --sweep-tokens --baselines-up-to 1 --no-host-cost \
    --tuning "$work/no-tuning.json" --out-dir "$work/sweep-wide" > "$work/bench-wide.log" 2>&1
echo "bench wide exit $? at $((SECONDS - start)) s"
tar -czf "$out/results.tar.gz" -C "$work" .
OUT=$work/census timeout $((560 - (SECONDS - start))) bash perf/proto/call_s13_census.sh > "$work/census.log" 2>&1
echo "census exit $? at $((SECONDS - start)) s"; cat "$work/census.log"
tar -czf "$out/results.tar.gz" -C "$work" .
