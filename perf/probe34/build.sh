#!/usr/bin/env bash
# Builds perf/PROBE/kernels: a census script's random chains (CENSUS, default perf/probe34/census.py) whose
# plan the working tree changes from BASE (perf/proto/changed_plans.py), each built by BASE (_old) and by the
# working tree (_new).
# Run from the repo root: BASE=<commit> [CENSUS=perf/probe34/census.py] [PROBE=probe34] [SEED=34] [COUNT=76]
# bash perf/probe34/build.sh (probe35 and probe36 held later rules out on seeds 35 and 36; probe37 is
# CENSUS=perf/probe37/census.py on seed 37).
set -eu
source perf/proto/probe_build.sh
probe_setup ${PROBE:-probe34}
"$python" "${CENSUS:-perf/probe34/census.py}" "$work/census" --seed ${SEED:-34} --count "${COUNT:-76}"
git worktree add -q --detach "$work/planner" "$BASE"
"$python" perf/proto/changed_plans.py "$work/planner" "$work/census"
git worktree remove --force "$work/planner"
build_old_new census "$BASE"
probe_collect
