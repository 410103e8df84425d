#!/usr/bin/env bash
# probe99's device call: the new builds against their references (every route's counts), then old against new
# at 8, 128 and 256 tokens (perf/proto/probe_time.py, interleaved rounds), then the new plain rows against
# torch.compile at 128 and 256 tokens in the time left. Logs and JSON to $OUT.
set -u
out=${OUT:-/tmp/probe99}
k=perf/probe99/kernels
mkdir -p "$out"
start=$SECONDS
timeout 120 python3 scripts/gpu_hunt.py check $k/check --jobs 15 > "$out/check.log" 2>&1
echo "check exit $? at $((SECONDS - start)) s"; tail -1 "$out/check.log"; grep -A4 FAIL "$out/check.log" | cut -c1-300 | head -20
for tokens in 8 128 256; do
    PROBE_TOKENS=$tokens timeout 150 python3 perf/proto/probe_time.py $k/time/kernels "$out/time_$tokens.json" "${ROUNDS:-3}" \
        > "$out/time_$tokens.log" 2>&1
    echo "time $tokens exit $? at $((SECONDS - start)) s"
done
mkdir -p "$out/plain"
cp $k/specs_new/hold_*.toml $k/specs_new/sweep_rms_f16_*.toml $k/specs_new/sweep_ln_bf16_*.toml $k/specs_new/issue_ln_f16_1536_new.toml \
    $k/specs_new/sweep_add_rms_f32_1024_new.toml "$out/plain/" 2>/dev/null
echo '{}' > "$out/no-tuning.json"
timeout $((${BUDGET_S:-560} - (SECONDS - start))) python3 -m fusegen bench "$out/plain" --tokens 128 256 --baselines compile \
    --no-host-cost --tuning "$out/no-tuning.json" --out-dir "$out/compile" > "$out/compile.log" 2>&1
echo "compile exit $? at $((SECONDS - start)) s"
rm -rf "$out/plain"
