#!/usr/bin/env bash
# probe67's device call: every pair timed at its sweep count (outputs of each pair compared bit for bit
# first), two interleaved rounds. Log and JSON to $OUT.
set -u
out=${OUT:-/tmp/probe67}
mkdir -p "$out"
timeout "${BUDGET_S:-470}" python3 perf/proto/probe_time.py perf/probe67/kernels/time/kernels "$out/time.json" "${ROUNDS:-2}" > "$out/time.log" 2>&1
echo "time exit $?"
grep -c "bit-identical" "$out/time.log"; grep -E "DIFFER|not timed" "$out/time.log" | head
grep -E "x copy" "$out/time.log" | awk '{print $1, $5}' | sort | paste - - | awk '{n=$2; o=$4; printf "%-45s old %s new %s %+.1f%%\n", $1, n, o, 100*(o/n-1)}' | sed 's/_new//'
