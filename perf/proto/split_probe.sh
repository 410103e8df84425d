#!/usr/bin/env bash
# Session 10's first device call (issues 14 and 16): the pending GPU cases (row_split, per-head norms on
# heads of 96/192, the whole-kernel variants without Y); perf/variants17 (every row_split of the chains
# that need no whole row) at 1 … 256 and 16384 tokens, the unsplit ones against torch.compile; LayerNorm →
# RoPE 12288 under the unstaging rule. Results in $OUT. Run from the repo root with tilelang importable.
default_out=/tmp/split-probe
source perf/proto/device_prologue.sh
pending=$(python3 - <<'PY'
import sys
sys.path.insert(0, "tests")
from cases import PENDING_GPU_CASES
print(" or ".join(sorted(PENDING_GPU_CASES)))
PY
)
FUSEGEN_GPU_REPORT="$out/pending-report.json" timeout 200 python3 -m pytest -m gpu tests/test_gpu_matrix.py -k "$pending" \
    -q -p no:cacheprovider -n 8 > "$out/pending.log" 2>&1
echo "pending exit $? at $((SECONDS - start)) s"; tail -4 "$out/pending.log"
pack
# shellcheck disable=SC2046
timeout 170 python3 -m fusegen bench $(ls perf/variants17/*_split1.toml) --tokens 1 8 64 256 16384 --baselines compile \
    --no-host-cost --tuning "$out/no-tuning.json" --out-dir "$out/unsplit" > "$out/bench-unsplit.log" 2>&1
echo "unsplit exit $? at $((SECONDS - start)) s"
pack
# shellcheck disable=SC2046
timeout 150 python3 -m fusegen bench $(ls perf/variants17/*.toml | grep -v _split1.toml) --tokens 1 8 64 256 16384 \
    --baselines --no-host-cost --tuning "$out/no-tuning.json" --out-dir "$out/split" > "$out/bench-split.log" 2>&1
echo "split exit $? at $((SECONDS - start)) s"
pack
timeout 60 python3 -m fusegen bench perf/sweep/sweep_ln_rope_f16_12288.toml perf/sweep/sweep_rms_f16_8192.toml --tokens 16384 \
    --baselines --no-host-cost --tuning "$out/no-tuning.json" --out-dir "$out/ln-rope-12288" > "$out/bench-12288.log" 2>&1
echo "12288 exit $? at $((SECONDS - start)) s"
pack
