#!/usr/bin/env bash
# probe109's device call: every build against its reference (scripts/gpu_hunt.py check: the routes' counts and edges,
# odd counts among them, so R rows a block meet a last block of fewer), the bits of each R-row variant against one row
# a block and the planner's program, then every build timed at its sweep count in ROUNDS interleaved rounds.
# PROBE=probe110: the same call over perf/probe110's held-out draws (each NAME_rR's bits against the planner's NAME).
set -u
probe=${PROBE:-probe109}
out=${OUT:-/tmp/$probe}
mkdir -p "$out"
start=$SECONDS
k=perf/$probe/kernels/time
timeout "${CHECK_S:-150}" python3 scripts/gpu_hunt.py check $k --jobs 15 > "$out/check.log" 2>&1
echo "check exit $? at $((SECONDS - start)) s"; tail -1 "$out/check.log"; grep -A4 FAIL "$out/check.log" | cut -c1-300 | head -20
timeout 120 python3 perf/probe109/bits.py $k/kernels > "$out/bits.log" 2>&1
echo "bits exit $? at $((SECONDS - start)) s"; grep -c "bit-identical" "$out/bits.log"; grep DIFFER "$out/bits.log"
timeout $((${BUDGET_S:-540} - (SECONDS - start))) python3 perf/proto/probe_time.py $k/kernels "$out/time.json" "${ROUNDS:-3}" \
    > "$out/time.log" 2>&1
echo "time exit $? at $((SECONDS - start)) s"
grep -hE "x copy|not timed" "$out/time.log" | sort
