#!/usr/bin/env bash
# Session 10's third and fourth device calls (issues 14, 16). STEPS (default "tests few small8") picks:
#   tests    the model tests, the transformers checks and the GPU matrix cases the planner now splits at
#            up to 64 tokens (3 KB parts);
#   few      the chains it splits, and rope → group quant 7168 whole, at 1 … 256 tokens against torch.compile;
#   small8   the untuned sweep at 8 tokens against torch.compile (static, CUDA-graph timed), as far as the
#            time allows (bench.json is written after every kernel);
#   small256 the same at 256 tokens;
#   wide     the untuned sweep at 8 tokens and at its M = max(16384, 2^26 / hidden), fusegen alone;
#   ncu      ncu of rope → group quant 7168 at 8 tokens (whole and split) beside Qwen3 q.
# Results in $OUT. Run from the repo root with tilelang importable.
default_out=/tmp/split-few
source perf/proto/device_prologue.sh
steps=" ${STEPS:-tests few small8} "
budget=${BUDGET_S:-500}
left() { echo $((budget - (SECONDS - start))); }
if [[ $steps == *" tests "* ]]; then
    split_cases=$(python3 - <<'PY'
import sys
sys.path.insert(0, "tests")
from cases import CASES, spec_for
from fusegen.schedule import few_token_split
from fusegen.spec import KernelSpec
print(" or ".join(n for n in sorted(CASES) if few_token_split(KernelSpec.model_validate(spec_for(n))) > 1))
PY
)
    FUSEGEN_GPU_REPORT="$out/split-report.json" timeout 150 python3 -m pytest -m gpu tests/test_models.py tests/test_hf_models.py \
        "tests/test_gpu_matrix.py::test_case_matches_reference" -k "not test_gpu_matrix or $split_cases" -q -p no:cacheprovider -n 8 \
        > "$out/split-tests.log" 2>&1
    echo "split tests exit $? at $((SECONDS - start)) s"; tail -2 "$out/split-tests.log"
    pack
fi
if [[ $steps == *" few "* ]]; then
    timeout 150 python3 -m fusegen bench specs/models/deepseek-v3-mla-q-b.toml specs/models/gemma-3-12b-q.toml specs/models/qwen3-8b-q.toml \
        perf/sweep/sweep_qk_norm_rope_f16_3584.toml perf/sweep/sweep_qk_norm_rope_f16_7168.toml perf/variants17/rope_g128_bf16_7168_auto.toml \
        perf/variants17/rope_g128_bf16_7168_split1.toml --tokens 1 8 64 256 --baselines compile --no-host-cost \
        --tuning "$out/no-tuning.json" --out-dir "$out/few" > "$out/bench-few.log" 2>&1
    echo "few exit $? at $((SECONDS - start)) s"
    pack
fi
for count in 8 256; do
    if [[ $steps == *" small$count "* ]]; then
        timeout "$(($(left) - 5))" python3 -m fusegen bench perf/sweep --tokens "$count" --baselines compile --no-host-cost \
            --tuning "$out/no-tuning.json" --out-dir "$out/small$count" > "$out/bench-small$count.log" 2>&1
        echo "small$count exit $? at $((SECONDS - start)) s"
        pack
    fi
done
if [[ $steps == *" wide "* ]]; then
    timeout "$(($(left) - 60))" python3 -m fusegen bench perf/sweep --tokens 8 --sweep-tokens --baselines --no-host-cost \
        --tuning "$out/no-tuning.json" --out-dir "$out/wide" > "$out/bench-wide.log" 2>&1
    echo "wide exit $? at $((SECONDS - start)) s"
    pack
fi
if [[ $steps == *" ncu "* ]]; then
    # Why rope → group quant 7168 takes ~2.8 µs at 8 tokens where q_b's per-head RoPE takes 1.7 (whole and split).
    python3 -m fusegen build perf/variants17/rope_g128_bf16_7168_auto.toml perf/variants17/rope_g128_bf16_7168_split1.toml \
        specs/models/qwen3-8b-q.toml --out ncu_gen --tuning "$out/no-tuning.json" > "$out/ncu-build.log" 2>&1
    TOKENS=8 timeout 50 ncu --section SpeedOfLight --section LaunchStats --section WarpStateStats --section SchedulerStats \
        --launch-skip 0 --launch-count 6 python3 perf/proto/ncu_rows.py ncu_gen rope_g128_bf16_7168 rope_g128_bf16_7168_split1 \
        qwen3_8b_q_norm_rope > "$out/ncu-small.txt" 2>&1
    echo "ncu exit $? at $((SECONDS - start)) s"
    pack
fi
