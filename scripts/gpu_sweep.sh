#!/usr/bin/env bash
# Issue 16's sweep on a Hopper GPU, in one device call of at most BUDGET_S seconds (default 530, under a
# 9-minute call). Run from the repo root with tilelang importable. STEPS picks what runs, in this order:
#   sweep     the specs of SWEEP_SPECS (default perf/sweep) untuned — the planner's own schedules, no
#             tuning file — each at its M = max(16384, 2^26 / hidden) and at 8 tokens (fusegen only), then
#             at 8 and 256 tokens against torch.compile (static, CUDA-graph timed) in the time left;
#   tuned     `fusegen tune --quick` of the same specs (untuned start), then the sweep count with those
#             winners: the plot's "tuned" series (a call of its own: 8 candidates × 56 specs; unpack both
#             calls' results and run scripts/sweep_report.py with --tuned on any machine);
#   check     a full `fusegen tune` of CHECK_SPECS (default: four sweep specs), then how often quick's pick
#             is the full search's winner (scripts/quick_tune_check.py) — a call of its own.
# Estimated (BENCHMARKS.md and NOTES.md step 12: 652 tune candidates compiled, checked and timed at three
# counts in 9 minutes, ~0.8 s each; the target matrix's 28 kernels with one torch.compile each in ~2 of
# the ~6 minutes of scripts/gpu_session.sh): compiling 56 kernels on 16 cores ~30 s, timing them at two
# counts ~1.5 min, then ~3 s per torch.compile × 112 (56 specs × 2 counts) ~5.5 min — which is why
# the baselines come last and run under the budget's remainder: bench.json is written after every kernel,
# and sweep.md names any spec a cut-short run did not reach (rerun with SWEEP_SPECS naming those).
# Results: $OUT/sweep.md, $OUT/sweep.png and everything (bench runs, logs, tune output) in
# $OUT/results.tar.gz; commit the sweep as docs/bench/sweep/ (see perf/README.md).
set -u
out=${OUT:-/tmp/fusegen-sweep}
steps=" ${STEPS:-sweep} "
specs=${SWEEP_SPECS:-perf/sweep}
budget=${BUDGET_S:-530}
check_specs=${CHECK_SPECS:-perf/sweep/issue_rms_rope_g128_bf16_5120.toml perf/sweep/issue_ln_f16_1536.toml perf/sweep/sweep_rms_rope_f16_2048.toml perf/sweep/sweep_add_rms_quant_bf16_3072.toml}
start=$SECONDS
work=$(mktemp -d)
mkdir -p "$out"
untuned="$work/no-tuning.json"
echo '{}' > "$untuned" # an empty table: every kernel planned by the rules alone
pack() { tar -czf "$out/results.tar.gz" -C "$work" .; }
left() { echo $((budget - (SECONDS - start))); }
if [[ $steps == *" sweep "* ]]; then
    python3 -m fusegen bench "$specs" --tokens 8 --sweep-tokens --baselines-up-to 1 --no-host-cost --tuning "$untuned" \
        --out-dir "$work/sweep-wide" > "$work/bench-wide.log" 2>&1
    echo "bench wide exit $? at $((SECONDS - start)) s"
    pack
    timeout "$(($(left) - 20))" python3 -m fusegen bench "$specs" --tokens 8 256 --baselines compile --no-host-cost --tuning "$untuned" \
        --out-dir "$work/sweep-small" > "$work/bench-small.log" 2>&1
    echo "bench small exit $? at $((SECONDS - start)) s"
    python3 scripts/sweep_report.py "$specs" "$work/sweep-wide" --small "$work/sweep-small" --out "$work/report" \
        > "$work/report.log" 2>&1
    cp "$work/report/sweep.md" "$work/report/sweep.png" "$out/" 2>/dev/null
    pack
fi
if [[ $steps == *" tuned "* ]]; then
    timeout "$(($(left) - 90))" python3 -m fusegen tune "$specs" --quick --tuning "$work/tuning-quick.json" \
        --out-dir "$work/tune-quick" > "$work/tune-quick.log" 2>&1
    echo "quick tune exit $? at $((SECONDS - start)) s"
    pack
    timeout "$(($(left) - 10))" python3 -m fusegen bench "$specs" --tokens 8 --sweep-tokens --baselines-up-to 1 \
        --tuning "$work/tuning-quick.json" --out-dir "$work/sweep-tuned" > "$work/bench-tuned.log" 2>&1
    echo "bench tuned exit $? at $((SECONDS - start)) s"
    pack
fi
if [[ $steps == *" check "* ]]; then
    # shellcheck disable=SC2086  # the spec list splits into words
    timeout "$(($(left) - 10))" python3 -m fusegen tune $check_specs --tuning "$work/tuning-full.json" \
        --out-dir "$work/tune-full" > "$work/tune-full.log" 2>&1
    echo "full tune exit $? at $((SECONDS - start)) s"
    python3 scripts/quick_tune_check.py "$specs" "$work/tune-full/tune.json" > "$work/quick-check.md" 2>&1
    cp "$work/quick-check.md" "$out/"
    pack
fi
