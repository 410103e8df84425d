#!/usr/bin/env bash
# Session 11's closing device call: the GPU verification (tests, memcheck of every planner route — the
# two-warp few-token routes too — racecheck), the C++ launch path's host cost (perf/proto/native_cost.py,
# the drop-in checks), the model library against torch.compile at 8, 256 and 16384 tokens (with the host
# µs per call table), then the sweep's specs at 8 and 64 tokens against torch.compile in the time left.
default_out=/tmp/fusegen-final
# shellcheck source=perf/proto/device_prologue.sh
source perf/proto/device_prologue.sh
budget=${BUDGET_S:-580}
left() { echo $((budget - (SECONDS - start))); }
export FUSEGEN_CACHE_DIR="$out/cache"
OUT="$out/verify" bash scripts/gpu_verify.sh
echo "verify done at $((SECONDS - start)) s"
pack
python3 perf/proto/native_cost.py 2>&1 | grep -v -E "Warning|TileLang" > "$out/native_cost.log"
grep -E "torch.add\(x, x\) *[0-9]|kernel" "$out/native_cost.log"
timeout 150 python3 scripts/gpu_dropin.py "$out/dropin.json" > "$out/dropin.log" 2>&1
echo "dropin exit $? at $((SECONDS - start)) s"; grep -E "^  " "$out/dropin.log"
grep -o '"test_[a-z_]*": "[^"]*"' "$out/dropin.json" | sort | uniq -c
rm -rf "$out/cache/native"
pack
timeout "$(($(left) - 60))" python3 -m fusegen bench specs/models --tokens 8 256 16384 --baselines compile --out-dir "$out/models" \
    > "$out/bench-models.log" 2>&1
echo "models exit $? at $((SECONDS - start)) s"
pack
timeout "$(($(left) - 10))" python3 -m fusegen bench perf/sweep --tokens 8 64 --baselines compile --no-host-cost \
    --tuning "$out/no-tuning.json" --out-dir "$out/sweep-few" > "$out/bench-sweep-few.log" 2>&1
echo "sweep few exit $? at $((SECONDS - start)) s"
pack
