#!/usr/bin/env bash
# Session 31's third device call: the GPU verification of the tree (scripts/gpu_verify.sh), then the three
# probe59 rows the FILLED_SM_MIN_REGISTERS fix re-plans timed beside their old and probe59 builds.
set -u
out=${OUT:-/tmp/probe59final}
mkdir -p "$out/verify"
start=$SECONDS
OUT="$out/verify" bash scripts/gpu_verify.sh
echo "verify done at $((SECONDS - start)) s"
timeout $((${BUDGET_S:-570} - (SECONDS - start))) python3 perf/proto/probe_time.py perf/probe59/kernels/final/time/kernels "$out/time.json" 3 \
    > "$out/time.log" 2>&1
echo "final exit $? at $((SECONDS - start)) s"
grep -hE "x copy|not timed|DIFFER" "$out/time.log" | sort
