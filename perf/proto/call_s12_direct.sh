#!/usr/bin/env bash
# Session 12's second device call: the C++ path now calls each program's kernel function with what its host
# code packs (fusegen/native/kernel_call.py) — every kernel launch goes through it, so the whole GPU
# verification again, the ue8m0 tie's seed replayed, the host cost pieces (host function against kernel
# function) and `fusegen bench`'s host µs per call of every example and model kernel.
default_out=/tmp/fusegen-s12b
# shellcheck source=perf/proto/device_prologue.sh
source perf/proto/device_prologue.sh
export FUSEGEN_CACHE_DIR="$out/cache"
python3 -c "import time; t = time.time(); from fusegen import native; print('native', native.available(), native.unavailable(), round(time.time() - t, 1), 's')"
python3 perf/proto/native_cost.py rms_norm_rope_quant_fused layer_norm_fwd rms_norm 2>&1 | grep -v -E "Warning|TileLang" > "$out/native_cost.log"
cat "$out/native_cost.log"
pack
timeout 170 python3 -m fusegen bench specs specs/models --tokens 8 --baselines --out-dir "$out/host" > "$out/bench-host.log" 2>&1
echo "host bench exit $? at $((SECONDS - start)) s"
grep -E "^\| [a-z0-9_]+ \| 8 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|$" "$out/host/bench.md"
pack
timeout 150 python3 scripts/gpu_dropin.py "$out/dropin.json" > "$out/dropin.log" 2>&1
echo "dropin exit $? at $((SECONDS - start)) s"; grep -E "^  " "$out/dropin.log"
grep -o '"test_[a-z_]*": "[^"]*"' "$out/dropin.json" | sort | uniq -c
pack
python3 - <<'PY' 2>&1 | grep -v -E "Warning|TileLang"
import sys
sys.path.insert(0, "tests")
from pathlib import Path
from cases import spec_for
from fusegen import checking
from fusegen.spec import KernelSpec
module = checking.build_variant(KernelSpec.model_validate(spec_for("quant_g64_e5m2_ue8m0")), Path("/tmp/replay"))
checking.run_and_compare(module, 16384, seed=1703602026)
print("replayed quant_g64_e5m2_ue8m0 at 16384 tokens, seed 1703602026: passes")
PY
OUT="$out/verify" bash scripts/gpu_verify.sh
echo "verify done at $((SECONDS - start)) s"
pack
