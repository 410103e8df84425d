#!/usr/bin/env bash
# Builds perf/probe34/kernels: perf/probe34/census.py's random chains (seed 34) whose plan the working tree
# changes from BASE (perf/proto/changed_plans.py), each built by BASE (_old) and by the working tree (_new).
# Run from the repo root: BASE=<commit> [PROBE=probe34] [SEED=34] [COUNT=76] bash perf/probe34/build.sh (PROBE
# names the output, perf/PROBE/kernels: probe35 held the refined rules out on seed 35).
set -eu
source perf/proto/probe_build.sh
probe_setup ${PROBE:-probe34}
"$python" perf/probe34/census.py "$work/census" --seed ${SEED:-34} --count "${COUNT:-76}"
git worktree add -q --detach "$work/planner" "$BASE"
"$python" perf/proto/changed_plans.py "$work/planner" "$work/census"
git worktree remove --force "$work/planner"
build_old_new census "$BASE"
probe_collect
