#!/usr/bin/env bash
# One device call that proves and measures the committed kernels: the GPU verification, both bench runs
# and (with TUNE=1, before them) a fresh `fusegen tune` into $OUT/tuning.json. The device tool brings
# back at most eight files per call, so everything is also packed into $OUT/results.tar.gz.
# Run from the repo root with tilelang importable; about 6 minutes, 15 with TUNE=1.
set -u
out=${OUT:-/tmp/fusegen-gpu}
mkdir -p "$out"
if [ "${TUNE:-0}" = 1 ]; then
    cp tuning.json "$out/tuning.json" 2>/dev/null
    python3 -m fusegen tune specs/ --hidden 4096 7168 --dtype float16 bfloat16 --tuning "$out/tuning.json" \
        --out-dir "$out/tune" > "$out/tune.log" 2>&1
    echo "tune exit $?"
fi
tuning=tuning.json
[ "${TUNE:-0}" = 1 ] && tuning="$out/tuning.json"
python3 -m fusegen bench specs/ --tokens 1 8 256 4096 16384 --tuning "$tuning" --out-dir "$out/examples" \
    > "$out/bench-examples.log" 2>&1
echo "bench examples exit $?"
python3 -m fusegen bench specs/ --tokens 16384 --hidden 4096 7168 --dtype bfloat16 float16 --baselines compile \
    --tuning "$tuning" --out-dir "$out/targets" > "$out/bench-targets.log" 2>&1
echo "bench targets exit $?"
OUT="$out/verify" bash scripts/gpu_verify.sh
tar -czf "$out/results.tar.gz" -C "$out" --exclude results.tar.gz .
