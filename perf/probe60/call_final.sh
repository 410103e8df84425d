#!/usr/bin/env bash
# probe60's second device call: the GPU verification of the tree that keeps the subtraction (not in reread
# programs) and not the widening, then its bf16 ue8m0 builds — which the first call timed with the widening
# too — and the reread control (CUDA as before) beside their old builds, three rounds (probe57's call).
ROUNDS=3 bash perf/probe57/call.sh perf/probe60/kernels/final/kernels
