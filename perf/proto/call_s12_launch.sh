#!/usr/bin/env bash
# Session 12's first device call: the launch path moved from a torch op to a Python extension function
# (fusegen/native/launch.cpp), which every kernel call goes through. So: the whole GPU verification
# (tests, memcheck, racecheck), the drop-in checks (opcheck, fullgraph, CUDA graphs), the host cost pieces
# (perf/proto/native_cost.py) and `fusegen bench`'s host µs per call of every example and model kernel.
default_out=/tmp/fusegen-s12
# shellcheck source=perf/proto/device_prologue.sh
source perf/proto/device_prologue.sh
export FUSEGEN_CACHE_DIR="$out/cache"
python3 -c "import time; t = time.time(); from fusegen import native; print('native', native.available(), native.unavailable(), round(time.time() - t, 1), 's')"
python3 perf/proto/native_cost.py rms_norm_rope_quant_fused layer_norm_fwd rms_norm 2>&1 | grep -v -E "Warning|TileLang" > "$out/native_cost.log"
cat "$out/native_cost.log"
pack
timeout 150 python3 scripts/gpu_dropin.py "$out/dropin.json" > "$out/dropin.log" 2>&1
echo "dropin exit $? at $((SECONDS - start)) s"; grep -E "^  " "$out/dropin.log"
grep -o '"test_[a-z_]*": "[^"]*"' "$out/dropin.json" | sort | uniq -c
pack
timeout 170 python3 -m fusegen bench specs specs/models --tokens 8 --baselines --out-dir "$out/host" > "$out/bench-host.log" 2>&1
echo "host bench exit $? at $((SECONDS - start)) s"
grep -A40 -i "host" "$out/host/bench.md" | grep -E "^\|" | head -40
pack
OUT="$out/verify" bash scripts/gpu_verify.sh
echo "verify done at $((SECONDS - start)) s"
pack
