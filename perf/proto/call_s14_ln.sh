#!/usr/bin/env bash
# Session 14's second device call (issue 16): the 16 LayerNorm sweep specs (all but the 512-column stream)
# in four builds, timed interleaved (perf/probe14/ln_kernels): _o the tree before this session (a3fa876),
# _a the thread-bound assumption and the norms' means by a reciprocal multiply, _b the assumption with
# LayerNorm's two divisions kept, _c _a with the side inputs read where used (prefetch = false). Run from
# the repo root with tilelang importable. Everything comes back in $OUT/results.tar.gz.
set -u
out=${OUT:-/tmp/s14ln}
work=$(mktemp -d)
start=$SECONDS
timeout 570 python3 perf/proto/probe_time.py perf/probe14/ln_kernels "$work/ln.json" 3 > "$work/ln.log" 2>&1
echo "ln timing exit $? at $((SECONDS - start)) s"
tar -czf "$out/results.tar.gz" -C "$work" .
grep "x copy" "$work/ln.log"
