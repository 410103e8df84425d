#!/usr/bin/env bash
# One device call that proves and measures the committed kernels. STEPS (default "targets verify
# examples"; add "tune" first for a fresh `fusegen tune` into $OUT's tuning.json, of TUNE_SPECS at
# TUNE_SHAPES, default every spec at hidden 4096/7168 × fp16/bf16) picks what runs, in this order:
# tune, the target matrix, the GPU verification, the example bench, the model library's bench
# ("models"), the torch-op drop-in checks and the Hugging Face decoder-layer example ("dropin"). A device call has a time limit, so
# a session can split them over calls. The device tool brings back at most eight files per call, so
# everything is packed into $OUT/results.tar.gz — after every step, so a call cut short by its time
# limit still returns what ran. Run from the repo root with tilelang importable; about 6 minutes for
# the default steps, 6 more to tune every spec.
set -u
out=${OUT:-/tmp/fusegen-gpu}
steps=" ${STEPS:-targets verify examples} "
work=$(mktemp -d)
mkdir -p "$out"
pack() { tar -czf "$out/results.tar.gz" -C "$work" .; }
tuning=tuning.json
if [[ $steps == *" tune "* ]]; then
    tuning="$work/tuning.json"
    cp tuning.json "$tuning" 2>/dev/null
    # shellcheck disable=SC2086  # the spec list and the shape options split into words
    python3 -m fusegen tune ${TUNE_SPECS:-specs/} ${TUNE_SHAPES:---hidden 4096 7168 --dtype float16 bfloat16} \
        --tuning "$tuning" --out-dir "$work/tune" > "$work/tune.log" 2>&1
    echo "tune exit $?"
    pack
fi
if [[ $steps == *" targets "* ]]; then
    python3 -m fusegen bench specs/ --tokens 16384 --hidden 4096 7168 --dtype bfloat16 float16 --baselines compile \
        --tuning "$tuning" --out-dir "$work/targets" > "$work/bench-targets.log" 2>&1
    echo "bench targets exit $?"
    pack
fi
if [[ $steps == *" verify "* ]]; then
    OUT="$work/verify" bash scripts/gpu_verify.sh
    pack
fi
if [[ $steps == *" examples "* ]]; then
    python3 -m fusegen bench specs/ --tokens 1 8 256 4096 16384 --tuning "$tuning" --out-dir "$work/examples" \
        > "$work/bench-examples.log" 2>&1
    echo "bench examples exit $?"
    pack
fi
if [[ $steps == *" models "* ]]; then
    python3 -m fusegen bench specs/models --tokens 8 256 16384 --baselines compile --out-dir "$work/models" \
        > "$work/bench-models.log" 2>&1
    echo "bench models exit $?"
    pack
fi
if [[ $steps == *" dropin "* ]]; then
    python3 scripts/gpu_dropin.py "$work/dropin.json" > "$work/dropin.log" 2>&1
    echo "dropin exit $?"; tail -12 "$work/dropin.log"
    python3 examples/hf_llama_decoder.py "$work/example.json" > "$work/example.log" 2>&1
    echo "example exit $?"; tail -12 "$work/example.log"
    pack
fi

