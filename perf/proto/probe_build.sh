# Sourced by the build_probe*.sh scripts: what every probe build does. Each writes renamed copies of sweep
# specs, builds them untuned with one or another fusegen tree, and collects the packages into one
# directory for a device call that carries it (git-ignored: perf/probe*/kernels/).

# probe_setup PROBE: repo, python ($PYTHON or the venv's), out (perf/PROBE/kernels) and work (a scratch
# directory, removed on exit with any git worktree made under it), holding an empty tuning file.
probe_setup() {
    repo=$PWD
    python=${PYTHON:-$repo/.venv/bin/python}
    out=$repo/perf/$1/kernels
    work=$(mktemp -d)
    trap 'rm -rf "$work"; git -C "$repo" worktree prune' EXIT
    echo '{}' > "$work/untuned.json"
}

# renamed_spec NAME SUFFIX DIR: perf/sweep/NAME.toml copied into $work/DIR, named NAME_SUFFIX; prints the copy
renamed_spec() {
    mkdir -p "$work/$3"
    sed "s/^name = \"$1\"$/name = \"$1_$2\"/" "perf/sweep/$1.toml" > "$work/$3/$1_$2.toml"
    echo "$work/$3/$1_$2.toml"
}

# build_with TREE DIR: `fusegen build` of $work/DIR into $work/out-DIR with TREE's fusegen, run from outside
# the repo so the checkout's own fusegen is not the one imported
build_with() {
    (cd "$work" && PYTHONPATH=$1 "$python" -m fusegen build "$2" --out "$work/out-$2" --tuning untuned.json --jobs 2)
}

# probe_collect: every package built into $work/out-*/ copied into $out, emptied first; prints the count
probe_collect() {
    rm -rf "$out" && mkdir -p "$out" && touch "$out/__init__.py"
    cp -r "$work"/out-*/*/ "$out/"
    find "$out" -name plan.json | wc -l | xargs echo "kernel packages:"
}

# build_old_new DIR BASE: every spec of $work/DIR built by commit BASE (renamed NAME_old) and by the working
# tree (NAME_new); only the specs whose planned schedules differ (reasons aside) are kept for timing
build_old_new() {
    git worktree add -q --detach "$work/base" "$2"
    for side in old new; do
        mkdir -p "$work/$side"
        for f in "$work/$1"/*.toml; do
            n=$(basename "$f" .toml)
            sed "s/^name = \"$n\"$/name = \"${n}_$side\"/" "$f" > "$work/$side/${n}_$side.toml"
        done
    done
    build_with "$work/base" old
    build_with "$repo" new
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
}

# plan_or_drop DIR: every spec of $work/DIR planned untuned; one a schedule table makes unplannable (threads =
# 128 on a row past 64 values a thread…) is removed and named
plan_or_drop() {
    for f in "$work/$1"/*.toml; do
        (cd "$work" && PYTHONPATH=$repo "$python" -m fusegen plan "$f" --tuning untuned.json > /dev/null 2>&1) || { echo "refused: $(basename "$f")"; rm "$f"; }
    done
}
