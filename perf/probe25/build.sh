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
git worktree add -q --detach "$work/base" "$BASE"
for side in old new; do
    mkdir -p "$work/$side"
    for f in "$work"/census/*.toml; do
        n=$(basename "$f" .toml)
        sed "s/^name = \"$n\"$/name = \"${n}_$side\"/" "$f" > "$work/$side/${n}_$side.toml"
    done
done
build_with "$work/base" old
build_with "$repo" new
# Only the specs whose plan the rule changed are timed.
"$python" - "$work" <<'PY'
import json, shutil, sys
from pathlib import Path
work = Path(sys.argv[1])
for new in sorted((work / "out-new").glob("*_new")):
    old = work / "out-old" / (new.name.removesuffix("_new") + "_old")
    before, after = ([r["schedule"] | {"reasons": None} for r in json.loads((d / "plan.json").read_text())["routes"]] for d in (old, new))
    if before == after:
        shutil.rmtree(old), shutil.rmtree(new)
PY
probe_collect
