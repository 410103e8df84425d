#!/usr/bin/env bash
# Builds perf/probe38/kernels: every bf16 spec of the sweep (perf/sweep) untuned, twice — NAME_old, and NAME_new,
# which the call compiles with bf16 pairs widened from their words (bf16_words.py, through site/ on PYTHONPATH).
# Run from the repo root: bash perf/probe38/build.sh
set -eu
source perf/proto/probe_build.sh
probe_setup probe38
for f in $(grep -l '^dtype = "bfloat16"' perf/sweep/*.toml); do
    name=$(basename "$f" .toml)
    renamed_spec "$name" old specs > /dev/null
    renamed_spec "$name" new specs > /dev/null
done
build_with "$repo" specs
probe_collect
