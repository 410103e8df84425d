#!/usr/bin/env bash
# probe126's device call (any Hopper card, ~2 min; carry .device with perf/probe126/kernels packed by
# scripts/pack_built.sh, then `tar -xJf .device/built.tar.xz`): perf/probe126/replays.py at 256 and 128 tokens.
set -u
out=${OUT:-/tmp/probe126}
mkdir -p "$out"
for tokens in 256 128; do
    timeout 150 python3 perf/probe126/replays.py perf/probe126/kernels/built "$tokens" > "$out/time-$tokens.txt" 2> "$out/time-$tokens.err"
    echo "time at $tokens exit $?"; cat "$out/time-$tokens.txt"
done
