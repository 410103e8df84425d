#!/usr/bin/env bash
# probe108's device call: the reciprocal checked against __frcp_rn on every float32 of its range, then every pair
# timed at its sweep count in three interleaved rounds, old and new outputs compared bit for bit.
set -u
out=${OUT:-/tmp/probe108}
mkdir -p "$out"
nvcc -O3 -arch=sm_90a -o /tmp/rcp_exhaustive tests/rcp_exhaustive.cu && /tmp/rcp_exhaustive | tee "$out/rcp_exhaustive.log"
timeout "${BUDGET_S:-400}" python3 perf/proto/probe_time.py perf/probe108/kernels/time/kernels "$out/time.json" 3 > "$out/time.log" 2>&1
echo "time exit $?"
grep -c "bit-identical" "$out/time.log"; grep -hE "DIFFER|not timed" "$out/time.log" | head
