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
