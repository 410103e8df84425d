#!/usr/bin/env bash
# probe124's device call (any Hopper card, ~2 min): where fusegen's fp32 add → RMSNorm 6144 loses 1–2 % to
# torch.compile at 256 tokens (every H100 run since session 61), with 3072 beside it (above torch.compile in some
# runs, under in others). ncu profiles fusegen's kernel and torch.compile's Triton kernel(s) of each spec, three
# launches each, caches flushed before each (ncu's default), clocks unlocked: duration, DRAM and L2 bytes, SM
# activity spread (max against mean: how evenly the 256 rows land), warps resident, instructions, registers.
# CACHE=none: caches kept warm between launches, as a CUDA graph's replays of one kernel find them (with the L2's
# sector hit rate beside the rest). Results: $OUT/ncu.csv and its summary $OUT/summary.txt (perf/probe124/summary.py).
set -u
out=${OUT:-/tmp/probe124}
mkdir -p "$out" /tmp/probe124/specs
cp perf/sweep/sweep_add_rms_f32_6144.toml perf/sweep/sweep_add_rms_f32_3072.toml /tmp/probe124/specs/
echo '{}' > /tmp/probe124/no-tuning.json
python3 -m fusegen build /tmp/probe124/specs --out /tmp/probe124/kernels --tuning /tmp/probe124/no-tuning.json > "$out/build.log" 2>&1
echo "build exit $?"
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,sm__cycles_active.max,sm__cycles_active.avg,sm__cycles_elapsed.avg.per_second,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,launch__registers_per_thread,launch__grid_size,launch__block_size,lts__t_sector_hit_rate.pct
timeout 300 ncu --clock-control none --cache-control "${CACHE:-all}" --metrics "$metrics" -k "regex:sweep_add|triton" --csv \
    python3 perf/probe124/launch.py /tmp/probe124/kernels 256 3 > "$out/ncu.csv" 2> "$out/ncu.err"
echo "ncu exit $?"
python3 perf/probe124/summary.py "$out/ncu.csv" | tee "$out/summary.txt"
