#!/usr/bin/env bash
# Session 13's first device call (issue 16): which staging of side inputs is fast, and where the slow
# kernels' warps wait. perf/probe13/probe13_kernels holds 50 variants of 15 slow sweep specs (pf: every side input
# staged; pfalse: none; cols: per-column ones only; toks: per-token ones only — built by a probe patch of
# the emitter, see perf/probe13/README.md), timed interleaved at their sweep counts; then ncu with
# per-instruction stall sampling of four of them. Run from the repo root with tilelang importable.
default_out=/tmp/probe13
source perf/proto/device_prologue.sh
python3 perf/proto/probe_time.py perf/probe13/probe13_kernels "$out/time.json" 3 > "$out/time.log" 2>&1
echo "timing exit $? at $((SECONDS - start)) s"; pack
for k in sweep_rms_cache_rope_bf16_6144_pf sweep_rms_cache_rope_bf16_6144_pfalse issue_rms_rope_g128_bf16_5120_pf issue_ln_e5m2_token_bf16_2880_pf; do
    timeout 120 ncu --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
        --section SchedulerStats --section MemoryWorkloadAnalysis --section SourceCounters --import-source no \
        -k "regex:^${k}_kernel" --launch-skip 1 --launch-count 1 -o "$out/ncu_$k" -f \
        python3 perf/proto/ncu_rows.py perf/probe13/probe13_kernels "$k" > "$out/ncu_$k.log" 2>&1
    ncu --import "$out/ncu_$k.ncu-rep" --print-details all > "$out/ncu_$k.txt" 2>&1
    ncu --import "$out/ncu_$k.ncu-rep" --page source --csv --print-source sass > "$out/ncu_${k}_sass.csv" 2>&1
    echo "ncu $k at $((SECONDS - start)) s"; pack
done
tail -60 "$out/time.log"
