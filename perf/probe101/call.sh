#!/usr/bin/env bash
# probe101's device call: the few-token routes of db8cc92 (1 KB row parts up to 8 tokens where no op
# normalises the row, 3 KB parts from 9 to 64) on specs the planner was not fitted on — 49 unhinted draws
# (seeds 4401, 4402) that take them, built untuned and checked against their references at every route's
# counts (scripts/gpu_hunt.py check), then timed at 8 tokens against torch.compile; and `fusegen tune
# --quick` of the sweep's new row under 0.90 (bf16 RMSNorm → rescale → FP8 g64 2880) for its tuned column.
set -u
out=${OUT:-/tmp/probe101}
budget=${BUDGET_S:-560}
mkdir -p "$out"
work=$(mktemp -d)
start=$SECONDS
(cd perf/probe101/hunt && python3 -m fusegen build specs --out kernels --jobs 16 > "$work/build.log" 2>&1)
echo "build exit $? at $((SECONDS - start)) s"
python3 scripts/gpu_hunt.py check perf/probe101/hunt > "$work/hunt-check.log" 2>&1
echo "check exit $? at $((SECONDS - start)) s: $(grep -c ': ok$' "$work/hunt-check.log") ok"
grep -v ': ok$' "$work/hunt-check.log" | head -20
mkdir -p "$work/below"
cp perf/sweep/sweep_rms_rescale_quant_bf16_2880.toml "$work/below/"
OUT="$work/tuned" SWEEP_SPECS="$work/below" STEPS=tuned BUDGET_S=$((budget - (SECONDS - start) - 150)) bash scripts/gpu_sweep.sh
echo '{}' > "$work/no-tuning.json"
timeout $((budget - (SECONDS - start) - 10)) python3 -m fusegen bench perf/probe101/hunt/specs --tokens 8 --baselines compile \
    --no-host-cost --tuning "$work/no-tuning.json" --out-dir "$work/few" > "$work/few.log" 2>&1
echo "few-token bench exit $? at $((SECONDS - start)) s"
rm -rf perf/probe101/hunt/kernels/*/__pycache__
tar -czf "$out/all.tgz" -C "$work" .
