#!/usr/bin/env bash
# Session 31's first device call: the CASES entry whose plan the rules change through the GPU matrix, then
# probe58's builds (perf/probe51/call.sh: the changed _new builds against their references, everything timed
# at its sweep count, untuned). Logs and JSON to $OUT.
set -u
out=${OUT:-/tmp/probe58}
mkdir -p "$out"
start=$SECONDS
timeout 100 python3 -m pytest -m gpu tests/test_gpu_matrix.py -k joint_gptj_e5m2_224_threads -q -p no:cacheprovider -n 8 > "$out/matrix.log" 2>&1
echo "matrix exit $? at $((SECONDS - start)) s"; tail -2 "$out/matrix.log"
OUT="$out" ROUNDS=${ROUNDS:-2} BUDGET_S=$((${BUDGET_S:-570} - (SECONDS - start))) bash perf/probe51/call.sh perf/probe58/kernels
