#!/usr/bin/env bash
# Session 13's second device call (issue 16): the amax through |x| (quant_fp8 row_abs) against TileLang's
# reduce_absmax, on the 25 quant specs of the sweep, timed interleaved in one process
# (perf/probe13/abs_kernels: _old built from the tree before the change, _new after); then the whole GPU
# verification (scripts/gpu_verify.sh) of the tree. Run from the repo root with tilelang importable.
# Everything comes back in $OUT/results.tar.gz.
set -u
out=${OUT:-/tmp/s13abs}
work=$(mktemp -d)
start=$SECONDS
pack() { tar -czf "$out/results.tar.gz" -C "$work" .; }
OUT=$work timeout 330 bash scripts/gpu_verify.sh > "$work/verify.log" 2>&1
echo "verify exit $? at $((SECONDS - start)) s"; tail -5 "$work/pytest.log"; grep -h "exit" "$work/memcheck.log" "$work/racecheck.log"
pack
timeout $((560 - (SECONDS - start))) python3 perf/proto/probe_time.py perf/probe13/abs_kernels "$work/abs.json" 3 > "$work/abs.log" 2>&1
echo "abs timing exit $? at $((SECONDS - start)) s"
pack
grep "x copy" "$work/abs.log"
