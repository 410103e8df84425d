#!/usr/bin/env bash
# Session 14's third device call (issue 16): the LayerNorm sweep specs that the means by 1/N slowed (and
# three that it did not), each at the planner's threads (_p) and at twice as many (_tN, a threads hint), so
# a thread holds half the row and half the staged weight and bias (perf/probe14/th_kernels, built from
# 4b2cb2a), timed interleaved. Run from the repo root with tilelang importable; $OUT/results.tar.gz.
set -u
out=${OUT:-/tmp/s14th}
work=$(mktemp -d)
start=$SECONDS
timeout 400 python3 perf/proto/probe_time.py perf/probe14/th_kernels "$work/threads.json" 3 > "$work/threads.log" 2>&1
echo "threads timing exit $? at $((SECONDS - start)) s"
tar -czf "$out/results.tar.gz" -C "$work" .
grep "x copy" "$work/threads.log"
