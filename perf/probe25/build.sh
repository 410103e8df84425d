#!/usr/bin/env bash
# Builds perf/probe25/kernels: random chains (perf/probe23/census_specs.py, seed 25) at widths where the
# fewest-vectors rule (schedule.MIN_GOOD_VECTORS_PER_THREAD) changes the planner's layout, other than the
# 6656 it was fitted on — each built by the tree before the rule (_old, BASE) and by the working tree (_new).
# Run from the repo root: BASE=<commit> bash perf/probe25/build.sh
set -eu
source perf/proto/probe_build.sh
probe_setup probe25
"$python" perf/probe23/census_specs.py "$work/census" --seed 25 --count "${COUNT:-60}" \
    --widths 2176,2432,2816,2944,3328,3712,3968,4352,4864,5632,5888,7424,7936,9728,11776,14848,15872
build_old_new census "$BASE"
probe_collect
