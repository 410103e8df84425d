#!/usr/bin/env bash
# Session 30's second device call: the GPU verification of the tree (scripts/gpu_verify.sh), then probe57's
# variants (or the kernels directory named as the argument, ROUNDS rounds) timed with the time left. Logs and
# JSON to $OUT.
set -u
out=${OUT:-/tmp/probe57}
mkdir -p "$out/verify"
start=$SECONDS
OUT="$out/verify" bash scripts/gpu_verify.sh
echo "verify done at $((SECONDS - start)) s"
timeout $((${BUDGET_S:-570} - (SECONDS - start))) python3 perf/proto/probe_time.py "${1:-perf/probe57/kernels/time/kernels}" "$out/time.json" \
    "${ROUNDS:-1}" > "$out/time.log" 2>&1
echo "timing exit $? at $((SECONDS - start)) s"
grep -hE "x copy|not timed|DIFFER" "$out/time.log" | sort | head -90
