#!/usr/bin/env bash
# probe91's device call (session 40): the padded-stream cases of tests/cases.py (PENDING_GPU_CASES) against
# their references at the GPU matrix's counts and under racecheck (the ring's slots refilled by per-thread
# copies while other rows are read), then probe91's stream builds checked and every pair timed
# (perf/probe51/call.sh), then memcheck of the pending cases in what time is left. Logs to $OUT.
set -u
out=${OUT:-/tmp/probe91}
start=$SECONDS
bash perf/proto/pending_cases.sh stream_padded
BUDGET_S=$((${BUDGET_S:-440} - 50 - (SECONDS - start))) bash perf/probe51/call.sh perf/probe91/kernels
left=$((${BUDGET_S:-440} - (SECONDS - start)))
if [ "$left" -gt 40 ]; then
    timeout "$left" compute-sanitizer --tool memcheck --error-exitcode 9 python3 scripts/gpu_memcheck.py --pending-only > "$out/memcheck.log" 2>&1
    echo "memcheck exit $? at $((SECONDS - start)) s"; grep -E "sanitized |ERROR SUMMARY" "$out/memcheck.log" | tail -5
fi
