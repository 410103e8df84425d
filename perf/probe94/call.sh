#!/usr/bin/env bash
# probe94's device call (built in session 40): the register ring's pending cases (tests/cases.py
# PENDING_GPU_CASES) through the GPU matrix and racecheck, then probe94's `_r`/`_rmax` builds against their
# references and every build timed at its sweep count, untuned (perf/probe51/call.sh). Logs and JSON to $OUT.
# ~8 min.
set -u
start=$SECONDS
bash perf/proto/pending_cases.sh stream_registers
BUDGET_S=$((${BUDGET_S:-560} - (SECONDS - start))) bash perf/probe51/call.sh perf/probe94/kernels
