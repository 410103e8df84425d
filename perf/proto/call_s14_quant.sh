#!/usr/bin/env bash
# Session 14's last device call (issue 16): the FP8 scale's division as two fmas, 12 quant sweep specs
# built before (_old, 4b2cb2a) and after (_new) in perf/probe14/quant_kernels: each pair's outputs compared
# bit for bit on the same inputs, then timed interleaved. Run from the repo root with tilelang importable.
set -u
out=${OUT:-/tmp/s14quant}
work=$(mktemp -d)
start=$SECONDS
timeout 300 python3 perf/proto/probe_time.py perf/probe14/quant_kernels "$work/quant.json" 3 > "$work/quant.log" 2>&1
echo "quant timing exit $? at $((SECONDS - start)) s"
tar -czf "$out/results.tar.gz" -C "$work" .
grep -E "x copy|identical|DIFFER|not timed" "$work/quant.log"
