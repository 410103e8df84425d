#!/usr/bin/env bash
# Builds perf/probe28/kernels: random chains that gather a cache row (perf/probe28/census.py, seed 28) —
# each built by the tree before schedule.gathering_row and _gathered_where_used (_old, BASE) and by the
# working tree (_new); only the specs whose plan changed are kept.
# Run from the repo root: BASE=<commit> [PROBE=probe28] [SEED=28] [COUNT=60] bash perf/probe28/build.sh (PROBE names the
# output, perf/PROBE/kernels: probe30 held the refined rules out on seed 30).
set -eu
source perf/proto/probe_build.sh
probe_setup ${PROBE:-probe28}
"$python" perf/probe28/census.py "$work/census" --seed ${SEED:-28} --count "${COUNT:-60}"
build_old_new census "$BASE"
probe_collect
