#!/usr/bin/env bash
# probe62's device call (next session's): the 24-warp builds against their references (scripts/gpu_hunt.py),
# then every NAME_old / NAME_new pair timed at its sweep count, outputs compared bit for bit (perf/probe51's
# call). Logs and JSON to $OUT.
OUT=${OUT:-/tmp/probe62} ROUNDS=${ROUNDS:-2} bash perf/probe51/call.sh perf/probe62/kernels
