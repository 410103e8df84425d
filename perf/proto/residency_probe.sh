#!/usr/bin/env bash
# Session 9's diagnostic device call (issue 16 and 14, 15): the sweep specs under 0.90 × copy against their
# hinted copies in perf/sweep-probe2 (higher fragment launch bounds, prefetch off, half the threads) in one
# bench run; ncu of six of them and two that run at 0.97; the short-row copy floor; the host cost of
# allocating outputs. Results in $OUT. Run from the repo root with tilelang importable.
set -u
out=${OUT:-/tmp/probe}
mkdir -p "$out"
start=$SECONDS
base=$(ls perf/sweep-probe2/*.toml | sed -E 's#perf/sweep-probe2/(.*)_(b[0-9]+|pfalse|joint|t[0-9]+)\.toml#perf/sweep/\1.toml#' | sort -u)
echo '{}' > "$out/no-tuning.json"
# shellcheck disable=SC2086
timeout 300 python3 -m fusegen bench $base perf/sweep-probe2 --tokens 16384 --sweep-tokens --baselines-up-to 1 --no-host-cost \
    --tuning "$out/no-tuning.json" --out-dir "$out/probe" > "$out/bench-probe.log" 2>&1
echo "probe bench exit $? at $((SECONDS - start)) s"
python3 perf/proto/short_rows.py > "$out/short-rows.log" 2>&1
echo "short rows exit $? at $((SECONDS - start)) s"
python3 perf/proto/alloc_cost.py > "$out/alloc-cost.log" 2>&1
echo "alloc exit $? at $((SECONDS - start)) s"
kernels="issue_ln_e5m2_token_bf16_2880 sweep_ln_bf16_3840 sweep_ln_quant_f32_5120 sweep_rms_cache_rope_bf16_6144 sweep_rms_rope_quant_f16_16384 sweep_ln_rope_quant_f32_7168 sweep_ln_bf16_2560 sweep_rms_f16_3840"
files=$(for k in $kernels; do echo "perf/sweep/$k.toml"; done)
# shellcheck disable=SC2086
python3 -m fusegen build $files specs/models/qwen3-8b-k.toml specs/models/deepseek-v3-mla-kv-a.toml --out ncu_gen \
    --tuning "$out/no-tuning.json" > "$out/ncu-build.log" 2>&1
# shellcheck disable=SC2086
timeout 240 ncu --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section MemoryWorkloadAnalysis --section SchedulerStats --launch-skip 0 --launch-count 40 \
    python3 perf/proto/ncu_rows.py ncu_gen $kernels qwen3_8b_k_norm_rope deepseek_v3_mla_kv_a_norm_rope > "$out/ncu.txt" 2>&1
echo "ncu exit $? at $((SECONDS - start)) s"
