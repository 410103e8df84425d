#!/usr/bin/env bash
# probe100's device call (session 43): a fresh random draw's builds against their references, the plain rows
# torch.compile ties at 128-256 tokens on more threads, and a full `fusegen tune` of the two sweep rows that
# quick tuning leaves under 0.93 x copy. Everything to $OUT/all.tgz (the reply returns few files).
set -u
out=${OUT:-/tmp/probe100}
work=$(mktemp -d)
start=$SECONDS
left() { echo $((${BUDGET_S:-570} - (SECONDS - start))); }
echo '{}' > "$work/no-tuning.json"
timeout 200 python3 scripts/gpu_hunt.py check perf/probe100/kernels/hunt --jobs 15 > "$work/check.log" 2>&1
echo "check exit $? at $((SECONDS - start)) s"; tail -1 "$work/check.log"; grep -A4 FAIL "$work/check.log" | cut -c1-300 | head -30
timeout 150 python3 -m fusegen bench perf/probe100/specs --tokens 128 256 --baselines compile --no-host-cost \
    --tuning "$work/no-tuning.json" --out-dir "$work/threads" > "$work/threads.log" 2>&1
echo "threads exit $? at $((SECONDS - start)) s"
rows="perf/sweep/issue_ln_e5m2_token_bf16_2880.toml perf/sweep/sweep_rms_rope_quant_f16_2880.toml"
# shellcheck disable=SC2086  # the spec list splits into words
timeout $(($(left) - 45)) python3 -m fusegen tune $rows --tuning "$work/tuning-full.json" --out-dir "$work/tune-full" > "$work/tune-full.log" 2>&1
echo "full tune exit $? at $((SECONDS - start)) s"
# shellcheck disable=SC2086
timeout $(($(left) - 5)) python3 -m fusegen bench $rows --tokens 8 --sweep-tokens --baselines-up-to 1 --no-host-cost \
    --tuning "$work/tuning-full.json" --out-dir "$work/tuned-full" > "$work/bench-tuned.log" 2>&1
echo "bench tuned exit $? at $((SECONDS - start)) s"
mkdir -p "$out"
tar -czf "$out/all.tgz" -C "$work" .
grep "^| " "$work/threads/bench.md" | cut -d'|' -f2-6,9-10 | head -40
