#!/usr/bin/env bash
# The cases waiting in tests/cases.py's PENDING_GPU_CASES, on the device: the GPU matrix's tests whose names
# match FILTER (pytest -k), then racecheck of the pending cases (scripts/gpu_memcheck.py --pending-only: the
# stream's ring refilled while other rows are read). Logs to $OUT/matrix.log and $OUT/racecheck.log.
#
#     OUT=... bash perf/proto/pending_cases.sh FILTER
set -u
out=${OUT:-/tmp/pending-cases}
mkdir -p "$out"
start=$SECONDS
timeout 150 python3 -m pytest -m gpu tests/test_gpu_matrix.py -k "$1" -q -p no:cacheprovider -n 3 > "$out/matrix.log" 2>&1
echo "matrix exit $? at $((SECONDS - start)) s"; tail -2 "$out/matrix.log"
timeout 110 compute-sanitizer --tool racecheck --error-exitcode 9 python3 scripts/gpu_memcheck.py --pending-only > "$out/racecheck.log" 2>&1
echo "racecheck exit $? at $((SECONDS - start)) s"; grep -E "sanitized |RACECHECK SUMMARY|ERROR SUMMARY" "$out/racecheck.log" | tail -8
