#!/usr/bin/env bash
# The whole GPU verification in one device call: the GPU test matrix (records a JSON report), memcheck of
# every example kernel and stream case, racecheck of the stream cases and the staged scales. Run from the repo root with tilelang importable; logs to $OUT.
set -u
out=${OUT:-/tmp/fusegen-gpu}
mkdir -p "$out"
export FUSEGEN_GPU_REPORT="$out/gpu-report.json"
# Eight workers fit an H200's 141 GiB; on an 80 GiB H100 they ran five of the 16384-token model tests out of memory
# (session 52: the eight held 5-15 GiB each, 10 on average), so one worker for each 12 GiB of the card, at most eight.
# Six on the H100 still left two tests without memory for a cuBLAS handle (session 53); since then every GPU test
# hands its worker's cached memory back when it ends (conftest.py).
card_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
workers=$((card_mib / 12288)); workers=$((workers > 8 ? 8 : workers < 1 ? 1 : workers))
echo "pytest workers: $workers ($card_mib MiB card)"
python3 -m pytest -m gpu tests generated -q -p no:cacheprovider -n "$workers" 2>&1 | tee "$out/pytest.log" | tail -15
unset FUSEGEN_GPU_REPORT
compute-sanitizer --tool memcheck --error-exitcode 9 python3 scripts/gpu_memcheck.py > "$out/memcheck.log" 2>&1
echo "memcheck exit $?" | tee -a "$out/memcheck.log"
grep -E "memcheck |ERROR SUMMARY" "$out/memcheck.log" | tail -10
# The stream variant's ring (a slot refilled by cp.async while another thread may still read it) and the
# staged column-major scales and a per-head statistic's slice sums (one thread reads what another wrote).
compute-sanitizer --tool racecheck --error-exitcode 9 python3 scripts/gpu_memcheck.py --shared-only > "$out/racecheck.log" 2>&1
echo "racecheck exit $?" | tee -a "$out/racecheck.log"
grep -E "sanitized |ERROR SUMMARY|RACECHECK SUMMARY" "$out/racecheck.log" | tail -12
