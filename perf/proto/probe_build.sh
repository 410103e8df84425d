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
