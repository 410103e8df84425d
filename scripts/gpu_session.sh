#!/usr/bin/env bash
# One device call that proves and measures the committed kernels: (with TUNE=1, first) a fresh `fusegen
# tune` into $OUT/tuning.json, then the target matrix, the GPU verification and the example bench. The
# device tool brings back at most eight files per call, so everything is packed into
# $OUT/results.tar.gz — after every step, so a call cut short by its time limit still returns what ran.
# Run from the repo root with tilelang importable; about 6 minutes, 12 with TUNE=1.
set -u
out=${OUT:-/tmp/fusegen-gpu}
work=$(mktemp -d)
mkdir -p "$out"
pack() { tar -czf "$out/results.tar.gz" -C "$work" .; }
tuning=tuning.json
if [ "${TUNE:-0}" = 1 ]; then
    tuning="$work/tuning.json"
    cp tuning.json "$tuning" 2>/dev/null
    python3 -m fusegen tune specs/ --hidden 4096 7168 --dtype float16 bfloat16 --tuning "$tuning" \
        --out-dir "$work/tune" > "$work/tune.log" 2>&1
    echo "tune exit $?"
    pack
fi
python3 -m fusegen bench specs/ --tokens 16384 --hidden 4096 7168 --dtype bfloat16 float16 --baselines compile \
    --tuning "$tuning" --out-dir "$work/targets" > "$work/bench-targets.log" 2>&1
echo "bench targets exit $?"
pack
OUT="$work/verify" bash scripts/gpu_verify.sh
pack
python3 -m fusegen bench specs/ --tokens 1 8 256 4096 16384 --tuning "$tuning" --out-dir "$work/examples" \
    > "$work/bench-examples.log" 2>&1
echo "bench examples exit $?"
pack
