#!/usr/bin/env bash
# Builds perf/probe23/kernels: the census (census_specs.py) as the planner plans it (_auto); each spec again
# as the other program variant (_alt: stream where the planner took the fragment program on its route of
# many tokens, fragment where it streamed); per-head chains with their rows split in two (_rs2); and rows
# the planner gives 4- or 8-byte vectors, built by a tree that pads them to 16-byte vectors (_pad16).
# Run from the repo root.
set -eu
source perf/proto/probe_build.sh
probe_setup probe23
"$python" perf/probe23/census_specs.py "$work/census" --count "${COUNT:-80}"
mkdir -p "$work/auto"
for f in "$work"/census/*.toml; do
    n=$(basename "$f" .toml)
    sed "s/^name = \"$n\"$/name = \"${n}_auto\"/" "$f" > "$work/auto/${n}_auto.toml"
done
build_with "$repo" auto
"$python" - "$work" <<'PY'
import json, sys
from pathlib import Path
work = Path(sys.argv[1])
for d in ("alt", "rs2", "pad"):
    (work / d).mkdir()
for plan_file in sorted((work / "out-auto").glob("*/plan.json")):
    plan = json.loads(plan_file.read_text())
    many = plan["routes"][-1]["schedule"]
    name = plan_file.parent.name.removesuffix("_auto")
    text = (work / "census" / f"{name}.toml").read_text()
    def write(directory, suffix, schedule):
        body = text.replace(f'name = "{name}"', f'name = "{name}_{suffix}"')
        (work / directory / f"{name}_{suffix}.toml").write_text(body + ("\n[schedule]\n" + schedule + "\n" if schedule else ""))
    other = "fragment" if many["variant"] == "stream" else "stream"
    write("alt", "alt", f'variant = "{other}"')
    if "head_dim" in text:
        write("rs2", "rs2", 'variant = "fragment"\nrow_split = 2')
    if many["vector_bytes"] < 16:
        write("pad", "pad16", "")
PY
# Specs a hint does not fit are refused by the planner: drop them before the build (a build is all or nothing).
for d in alt rs2; do
    for f in "$work/$d"/*.toml; do
        (cd "$work" && PYTHONPATH=$repo "$python" -m fusegen plan "$f" --tuning untuned.json > /dev/null 2>&1) || { echo "refused: $(basename "$f")"; rm "$f"; }
    done
    build_with "$repo" "$d"
done
if ls "$work"/pad/*.toml > /dev/null 2>&1; then
    git worktree add -q --detach "$work/padtree" HEAD
    sed -i 's/^MAX_PADDING_SHARE = 8$/MAX_PADDING_SHARE = 2/' "$work/padtree/fusegen/schedule.py"
    grep -q "^MAX_PADDING_SHARE = 2$" "$work/padtree/fusegen/schedule.py"
    build_with "$work/padtree" pad
fi
probe_collect
