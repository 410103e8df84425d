#!/usr/bin/env bash
# probe104's device call: the rule's new builds checked against their references, old and new timed at the sweep
# count in interleaved rounds (perf/probe51/call.sh), then ncu's census of the committed sweep's three 16-bit
# 2880-column quant rows (where their time goes, NOTES "Where the remaining time goes"). The check directory is
# assembled here from the timed NAME_new builds (carrying both copies would pass the carry limit).
set -u
out=${OUT:-/tmp/probe104}
mkdir -p "$out" perf/probe104/kernels/check/kernels
cp -r perf/probe104/kernels/time/kernels/*_new perf/probe104/kernels/check/kernels/
cp -r perf/probe104/specs_new perf/probe104/kernels/check/specs
start=$SECONDS
OUT=$out ROUNDS=${ROUNDS:-3} CHECK_S=${CHECK_S:-170} BUDGET_S=${BUDGET_S:-330} bash perf/probe51/call.sh perf/probe104/kernels
work=$(mktemp -d)
mkdir -p "$work/specs"
cp perf/sweep/issue_ln_e5m2_token_bf16_2880.toml perf/sweep/sweep_rms_quant_bf16_2880.toml \
    perf/sweep/sweep_rms_rescale_quant_bf16_2880.toml "$work/specs/"
echo '{}' > "$work/no-tuning.json"
python3 -m fusegen build "$work/specs" --out "$work/census_kernels" --tuning "$work/no-tuning.json" > "$out/census-build.log" 2>&1
metrics=smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread
timeout 120 ncu --clock-control none --metrics "$metrics" -k "regex:_kernel$" --csv \
    python3 perf/proto/ncu_sweep.py "$work/census_kernels" > "$out/census.csv" 2> "$out/census.err"
echo "ncu exit $? at $((SECONDS - start)) s: $(grep -c smsp__inst_executed.sum "$out/census.csv") kernels"
timeout 120 ncu --clock-control none --section WarpStateStats --section SchedulerStats -k "regex:_kernel$" --csv \
    python3 perf/proto/ncu_sweep.py "$work/census_kernels" > "$out/stalls.csv" 2> "$out/stalls.err"
echo "ncu stalls exit $? at $((SECONDS - start)) s"
