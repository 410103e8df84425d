#!/usr/bin/env bash
# Session 31's third device call: the GPU verification of the tree, then the three probe59 rows that
# FILLED_SM_MIN_REGISTERS re-plans, timed in three rounds beside their old and probe59 builds (probe57's call).
ROUNDS=3 bash perf/probe57/call.sh perf/probe59/kernels/final/time/kernels
