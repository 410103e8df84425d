#!/usr/bin/env bash
# Session 13's instruction census (issue 16): ncu's executed warp instructions, issue-slot use, SM clock,
# duration and DRAM throughput of every sweep spec's untuned kernel at its sweep count, clocks unlocked
# (--clock-control none) — what perf/proto/issue_floor.py turns into each spec's issue floor. Run from
# the repo root with tilelang importable; results in $OUT/results.tar.gz.
set -u
out=${OUT:-/tmp/s13census}
mkdir -p "$out"
work=$(mktemp -d)
start=$SECONDS
echo '{}' > "$work/no-tuning.json"
python3 -m fusegen build perf/sweep --out census_kernels --tuning "$work/no-tuning.json" > "$work/build.log" 2>&1
echo "build exit $? at $((SECONDS - start)) s"
metrics=smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread
timeout 420 ncu --clock-control none --metrics "$metrics" -k "regex:_kernel$" --csv \
    python3 perf/proto/ncu_sweep.py census_kernels > "$work/census.csv" 2> "$work/census.err"
echo "ncu exit $? at $((SECONDS - start)) s"
tar -czf "$out/results.tar.gz" -C "$work" .
grep -c "smsp__inst_executed.sum" "$work/census.csv"
