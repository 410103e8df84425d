#!/usr/bin/env bash
# Session 10's second device call (issue 14, 16): the planner's split for up to 64 tokens on the GPU — the
# model tests and the transformers checks (1 and 37 tokens take the split route), the GPU matrix cases the
# rule splits; the model library and the split-eligible sweep specs at 1 … 256 tokens against
# torch.compile; every row_split of perf/variants17 at 1, 8 and 64 tokens (is the rule's pick the best?).
# Results in $OUT. Run from the repo root with tilelang importable.
set -u
out=${OUT:-/tmp/split-check}
mkdir -p "$out"
start=$SECONDS
pack() { tar -czf "$out/results.tar.gz" -C "$out" --exclude results.tar.gz .; }
split_cases=$(python3 - <<'PY'
import sys
sys.path.insert(0, "tests")
from cases import CASES, spec_for
from fusegen.schedule import few_token_split
from fusegen.spec import KernelSpec
print(" or ".join(n for n in sorted(CASES) if few_token_split(KernelSpec.model_validate(spec_for(n))) > 1))
PY
)
FUSEGEN_GPU_REPORT="$out/split-report.json" timeout 200 python3 -m pytest -m gpu tests/test_models.py tests/test_hf_models.py \
    "tests/test_gpu_matrix.py::test_case_matches_reference" -k "not test_gpu_matrix or $split_cases" -q -p no:cacheprovider -n 8 \
    > "$out/split-tests.log" 2>&1
echo "split tests exit $? at $((SECONDS - start)) s"; tail -4 "$out/split-tests.log"
pack
timeout 170 python3 -m fusegen bench specs/models perf/sweep/sweep_qk_norm_rope_f16_2048.toml perf/sweep/sweep_qk_norm_rope_f16_3584.toml \
    perf/sweep/sweep_qk_norm_rope_f16_7168.toml perf/variants17/rope_g128_bf16_7168_auto.toml --tokens 1 8 64 256 --baselines compile \
    --no-host-cost --tuning "$out/no-tuning.json" --out-dir "$out/few" > "$out/bench-few.log" 2>&1
echo "few exit $? at $((SECONDS - start)) s"
pack
# shellcheck disable=SC2046
timeout 120 python3 -m fusegen bench $(ls perf/variants17/*.toml | grep -v -e _auto.toml -e deepseek_v3_mla_q_b) --tokens 1 8 64 \
    --baselines --no-host-cost --tuning "$out/no-tuning.json" --out-dir "$out/splits" > "$out/bench-splits.log" 2>&1
echo "splits exit $? at $((SECONDS - start)) s"
pack
