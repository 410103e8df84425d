#!/usr/bin/env bash
# probe106's second device call: the held-out pairs (build.py heldout, then build OLD_TREE perf/probe106/heldout)
# checked and timed at the sweep count in three interleaved rounds.
set -u
out=${OUT:-/tmp/probe106}
k=perf/probe106/kernels
mkdir -p $k/check/kernels && cp -r $k/time/kernels/*_new $k/check/kernels/
OUT=$out ROUNDS=3 CHECK_S=${CHECK_S:-100} BUDGET_S=${BUDGET_S:-260} bash perf/probe51/call.sh $k
