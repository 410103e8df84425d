#!/usr/bin/env bash
# probe118's device call (carry .device with perf/probe118/kernels packed by scripts/pack_built.sh, then
# `tar -xJf .device/built.tar.xz`): every NAME_frag against its reference (scripts/gpu_hunt.py check), then every
# pair timed at its sweep count in ROUNDS interleaved rounds and compared by perf/probe111/pairs.py.
set -u
out=${OUT:-/tmp/probe118}
k=perf/probe118/kernels/time/kernels
mkdir -p "$out" /tmp/probe118-frag/kernels
start=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/gpu.txt"
cp -r $k/*_frag /tmp/probe118-frag/kernels/
timeout "${CHECK_S:-120}" python3 scripts/gpu_hunt.py check /tmp/probe118-frag --jobs 15 > "$out/check.log" 2>&1
echo "check exit $? at $((SECONDS - start)) s"; tail -1 "$out/check.log"; grep -A4 FAIL "$out/check.log" | cut -c1-300 | head -20
timeout $((${BUDGET_S:-300} - (SECONDS - start))) python3 perf/proto/probe_time.py $k "$out/time.json" "${ROUNDS:-3}" > "$out/time.log" 2>&1
echo "time exit $? at $((SECONDS - start)) s"
python3 perf/probe111/pairs.py "$out/time.json" $k | tee "$out/pairs.txt" | tail -3
