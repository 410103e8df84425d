#!/usr/bin/env bash
# probe107's device call: the new builds checked against their references, then every pair timed at its sweep
# count in three interleaved rounds (perf/probe51/call.sh).
set -u
out=${OUT:-/tmp/probe107}
k=perf/probe107/kernels
mkdir -p $k/check/kernels && cp -r $k/time/kernels/*_new $k/check/kernels/
OUT=$out ROUNDS=3 CHECK_S=${CHECK_S:-150} BUDGET_S=${BUDGET_S:-440} bash perf/probe51/call.sh $k
