#!/usr/bin/env bash
# Builds perf/probe24/kernels: each spec of SPECS (census specs of perf/probe23 and sweep specs, by file) as
# a fragment program at every thread count that covers its row in 16-byte vectors with 16 to 64 values a
# thread and at most a quarter of padding (_tNNN), beside the planner's own (_auto). Run from the repo root.
set -eu
source perf/proto/probe_build.sh
probe_setup probe24
"$python" perf/probe23/census_specs.py "$work/census" --count 80
"$python" - "$work" perf/probe24/specs.txt <<'PY'
import sys
from pathlib import Path
from fusegen.spec import load_spec
from fusegen.schedule import _row_schedule, thread_counts, columns_multiple
from fusegen.errors import ChainError

work, listing = Path(sys.argv[1]), Path(sys.argv[2])
(work / "specs").mkdir()
for stem in listing.read_text().split():
    source = work / "census" / f"{stem}.toml" if stem.startswith("c") else Path("perf/sweep") / f"{stem}.toml"
    spec, text = load_spec(source)
    def write(suffix, schedule):
        body = text.replace(f'name = "{stem}"', f'name = "{stem}_{suffix}"')
        (work / "specs" / f"{stem}_{suffix}.toml").write_text(body + (f"\n[schedule]\n{schedule}\n" if schedule else ""))
    write("auto", "")
    for threads in thread_counts(spec):
        try:
            row = _row_schedule(spec, 1, threads, columns_multiple(spec))
        except ChainError:
            continue
        if row.vector_bytes == 16 and 16 <= row.elems_per_thread <= 64 and (row.padded_hidden - spec.hidden) * 4 <= spec.hidden:
            write(f"t{threads}", f'variant = "fragment"\nthreads = {threads}')
PY
for f in "$work"/specs/*.toml; do
    (cd "$work" && PYTHONPATH=$repo "$python" -m fusegen plan "$f" --tuning untuned.json > /dev/null 2>&1) || { echo "refused: $(basename "$f")"; rm "$f"; }
done
build_with "$repo" specs
probe_collect
