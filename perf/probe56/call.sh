#!/usr/bin/env bash
# Session 30's first device call: probe55 (its _new builds against their references, then old and new timed,
# two rounds), then probe56's held-out sweep timed once. Logs and JSON to $OUT/probe55 and $OUT/probe56.
set -u
out=${OUT:-/tmp/probe56}
start=$SECONDS
OUT="$out/probe55" ROUNDS=2 BUDGET_S=380 bash perf/probe51/call.sh perf/probe55/kernels
mkdir -p "$out/probe56"
timeout $((570 - (SECONDS - start))) python3 perf/proto/probe_time.py perf/probe56/kernels/time/kernels "$out/probe56/time.json" 1 \
    > "$out/probe56/time.log" 2>&1
echo "probe56 exit $? at $((SECONDS - start)) s"
grep -hE "x copy|not timed" "$out/probe56/time.log" | sort | head -60
