#!/usr/bin/env bash
# The whole GPU verification in one device call: the GPU test matrix (records a JSON report), memcheck of
# every example kernel and stream case, racecheck of the stream cases and the staged scales. Run from the repo root with tilelang importable; logs to $OUT.
set -u
out=${OUT:-/tmp/fusegen-gpu}
mkdir -p "$out"
export FUSEGEN_GPU_REPORT="$out/gpu-report.json"
python3 -m pytest -m gpu tests generated -q -p no:cacheprovider -n 8 2>&1 | tee "$out/pytest.log" | tail -15
unset FUSEGEN_GPU_REPORT
compute-sanitizer --tool memcheck --error-exitcode 9 python3 scripts/gpu_memcheck.py > "$out/memcheck.log" 2>&1
echo "memcheck exit $?" | tee -a "$out/memcheck.log"
grep -E "memcheck |ERROR SUMMARY" "$out/memcheck.log" | tail -10
# The stream variant's ring (a slot refilled by cp.async while another thread may still read it) and the
# staged column-major scales and a per-head statistic's slice sums (one thread reads what another wrote).
compute-sanitizer --tool racecheck --error-exitcode 9 python3 scripts/gpu_memcheck.py --shared-only > "$out/racecheck.log" 2>&1
echo "racecheck exit $?" | tee -a "$out/racecheck.log"
grep -E "sanitized |ERROR SUMMARY|RACECHECK SUMMARY" "$out/racecheck.log" | tail -12
