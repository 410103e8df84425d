#!/usr/bin/env bash
# A session's closing device call in at most BUDGET_S seconds (default 560): the GPU verification first
# (tests, memcheck, racecheck), then the model library against torch.compile at 8, 256 and 16384 tokens,
# then SWEEP_SPECS (default perf/sweep) and any EXTRA_SPECS untuned at their sweep counts, then the
# target matrix (the tuned examples at 16384 tokens) in the time left. Results packed into
# $OUT/results.tar.gz after every step. Run from the repo root with tilelang importable.
set -u
out=${OUT:-/tmp/fusegen-final}
budget=${BUDGET_S:-560}
start=$SECONDS
work=$(mktemp -d)
mkdir -p "$out"
pack() { tar -czf "$out/results.tar.gz" -C "$work" .; }
echo '{}' > "$work/no-tuning.json" # an empty table: the sweep planned by the rules alone
left() { echo $((budget - (SECONDS - start))); }
OUT="$work/verify" bash scripts/gpu_verify.sh
echo "verify done at $((SECONDS - start)) s"
pack
timeout "$(($(left) - 30))" python3 -m fusegen bench specs/models --tokens 8 256 16384 --baselines compile --out-dir "$work/models" \
    > "$work/bench-models.log" 2>&1
echo "models exit $? at $((SECONDS - start)) s"
pack
# shellcheck disable=SC2086  # the spec list splits into words
timeout "$(($(left) - 20))" python3 -m fusegen bench ${SWEEP_SPECS:-perf/sweep} ${EXTRA_SPECS:-} --tokens 16384 --sweep-tokens \
    --baselines-up-to 1 --no-host-cost --tuning "$work/no-tuning.json" --out-dir "$work/sweep" > "$work/bench-sweep.log" 2>&1
echo "sweep exit $? at $((SECONDS - start)) s"
pack
timeout "$(($(left) - 10))" python3 -m fusegen bench specs/ --tokens 16384 --hidden 4096 7168 --dtype bfloat16 float16 \
    --baselines compile --out-dir "$work/targets" > "$work/bench-targets.log" 2>&1
echo "targets exit $? at $((SECONDS - start)) s"
pack
