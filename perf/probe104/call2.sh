#!/usr/bin/env bash
# probe104's second device call: the first (call.sh) ran out of its check and timing budget (61 of 63 new builds
# checked, all matching; the timing cut short while loading 126 kernels). This one checks the two builds left
# (CHECK_NAMES) and times half the held-out pairs (every second of seeds 4511–4513, sorted) and seed 4501's five
# — the kernels left in perf/probe104/kernels/time/kernels — in three interleaved rounds at the sweep count.
set -u
out=${OUT:-/tmp/probe104}
mkdir -p "$out" perf/probe104/kernels/check/kernels perf/probe104/kernels/check/specs
for name in ${CHECK_NAMES:-hunt_4512_550_new hunt_4513_181_new}; do
    cp -r "perf/probe104/kernels/time/kernels/$name" perf/probe104/kernels/check/kernels/
    cp "perf/probe104/specs_new/$name.toml" perf/probe104/kernels/check/specs/
done
OUT=$out ROUNDS=${ROUNDS:-3} CHECK_S=${CHECK_S:-60} BUDGET_S=${BUDGET_S:-330} bash perf/probe51/call.sh perf/probe104/kernels
