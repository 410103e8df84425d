#!/usr/bin/env bash
# Session 14's first device call (issue 16): the thread-bound assumption and the norms' mean by a
# reciprocal multiply, timed interleaved against the tree before them on the 27 sweep specs whose SASS they
# shorten most (perf/probe14/ab_kernels: _old built from a3fa876, _new after); then the whole GPU
# verification (scripts/gpu_verify.sh) of the tree. Run from the repo root with tilelang importable.
# Everything comes back in $OUT/results.tar.gz.
set -u
out=${OUT:-/tmp/s14ab}
work=$(mktemp -d)
start=$SECONDS
pack() { tar -czf "$out/results.tar.gz" -C "$work" .; }
OUT=$work timeout 330 bash scripts/gpu_verify.sh > "$work/verify.log" 2>&1
echo "verify exit $? at $((SECONDS - start)) s"; tail -5 "$work/pytest.log"; grep -h "exit" "$work/memcheck.log" "$work/racecheck.log"
pack
timeout $((570 - (SECONDS - start))) python3 perf/proto/probe_time.py perf/probe14/ab_kernels "$work/ab.json" 3 > "$work/ab.log" 2>&1
echo "ab timing exit $? at $((SECONDS - start)) s"
pack
grep "x copy" "$work/ab.log"
