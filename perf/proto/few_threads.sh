#!/usr/bin/env bash
# Session 11's second device call: the C++ launch path's host cost (perf/proto/native_cost.py, the drop-in
# checks, the model library's host µs per call), then perf/few-threads — each whole-row sweep spec beside
# a copy on 2× its threads — at 8 and 64 tokens, untuned, no baselines (the planner's own spec is
# the comparison; torch.compile at 8 tokens is in docs/bench/sweep/small from session 10).
default_out=/tmp/fusegen-few
# shellcheck source=perf/proto/device_prologue.sh
source perf/proto/device_prologue.sh
export FUSEGEN_CACHE_DIR="$out/cache"
python3 perf/proto/native_cost.py 2>&1 | grep -v -E "Warning|TileLang" > "$out/native_cost.log"
tail -30 "$out/native_cost.log"
timeout 150 python3 scripts/gpu_dropin.py "$out/dropin.json" > "$out/dropin.log" 2>&1
echo "dropin exit $? at $((SECONDS - start)) s"; grep -E "^  " "$out/dropin.log"
grep -o '"test_[a-z_]*": "[^"]*"' "$out/dropin.json" | sort | uniq -c
rm -rf "$out/cache"
pack
timeout 330 python3 -m fusegen bench perf/few-threads --tokens 8 64 --baselines --no-host-cost --tuning "$out/no-tuning.json" \
    --out-dir "$out/few" > "$out/bench-few.log" 2>&1
echo "few exit $? at $((SECONDS - start)) s"
pack
