#!/usr/bin/env bash
# Session 31's second device call: the CASES the rules change and the pending ones through the GPU matrix,
# then probe59's builds (perf/probe51/call.sh: the changed _new builds against their references, everything
# timed at its sweep count, untuned). Logs and JSON to $OUT.
set -u
out=${OUT:-/tmp/probe59}
mkdir -p "$out"
start=$SECONDS
timeout 120 python3 -m pytest -m gpu tests/test_gpu_matrix.py -k "joint_gptj_e5m2_224_threads or padded_warp_count or filled_sm_bound" \
    -q -p no:cacheprovider -n 8 > "$out/matrix.log" 2>&1
echo "matrix exit $? at $((SECONDS - start)) s"; tail -2 "$out/matrix.log"
OUT="$out" ROUNDS=${ROUNDS:-2} BUDGET_S=$((${BUDGET_S:-570} - (SECONDS - start))) bash perf/probe51/call.sh perf/probe59/kernels
