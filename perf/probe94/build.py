"""probe94 (built in session 40, for the next device session): the register ring (`ring = "registers"`,
74366fb) from the generator itself, held out. perf/probe93 ran the form only as hand edits of one program.
Rows: the sweep's ten under 0.95 × copy (docs/bench/sweep/bench.json) and seed 3901's unhinted, unpinned
draws under 0.95 (perf/probe84/results/draw.json), each one row a block as the planner plans it:
NAME_p (the planner's program), NAME_r (variant stream, ring registers, the planner's thread count, blocks an
SM as the stream sizing gives them) and NAME_rmax (the same at the most blocks an SM that ptxas compiles
without a spill, where that is more: probe93's 2880 row gained at five blocks, not at four).

`select` chose them in session 40 into perf/probe94/specs (committed: a seed's draws change whenever the
random-spec generator does, as it did when the ring hint joined it); `build` builds those into
kernels/time/kernels, the `_r` and `_rmax` builds also into kernels/check/kernels.

    .venv/bin/python perf/probe94/build.py build perf/probe94/kernels
    OUT=... bash perf/probe94/call.sh                                                    # on the device"""

from __future__ import annotations

import json
import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "perf" / "proto"))
sys.path.insert(0, str(ROOT / "perf" / "probe50"))
from build_rules import build  # noqa: E402  (probe50's untuned build in a given tree)
from probe_scripts import probe_script  # noqa: E402  (a sibling script)
from test_injection import dump  # noqa: E402

from fusegen.schedule import MAX_BLOCKS_PER_SM  # noqa: E402

SWEEP = ROOT / "perf" / "sweep"
DRAW = ROOT / "perf" / "probe84" / "kernels" / "draw" / "specs"
SLOWER_THAN = 0.95


def slow(bench: Path, key: str) -> set[str]:
    """The kernels a committed timing put under SLOWER_THAN × copy at their sweep count."""
    data = json.loads(bench.read_text())
    rows = [r for r in data["rows"] if r.get("impl", "fusegen") == "fusegen" and r["tokens"] > 8]
    copy = data["copy_tb_per_s"]
    return {r["kernel"] for r in rows if (r["x_copy"] if key == "x_copy" else r["tb_per_s"] / copy) < SLOWER_THAN}


SPECS = Path(__file__).resolve().parent / "specs"


def select(out: Path) -> None:
    """Writes the chosen rows' specs into SPECS (what session 40 ran, with seed 3901's draws of then)."""
    specs = SPECS
    specs.mkdir()
    scratch = out / "trials"
    sources = [SWEEP / f"{name}.toml" for name in sorted(slow(ROOT / "docs/bench/sweep/bench.json", "tb"))]
    sources += [DRAW / f"{name}.toml" for name in sorted(slow(ROOT / "perf/probe84/results/draw.json", "x_copy"))]
    unspilled = probe_script("probe88").unspilled
    schedule_of = probe_script("probe91").planned_schedule
    for path in sources:
        base = tomllib.loads(path.read_text())
        planned = schedule_of(base)
        if base.get("schedule") or base.get("tokens") or planned is None or planned.block_m != 1 or planned.row_split != 1:
            continue
        hints = {"variant": "stream", "ring": "registers", "threads": planned.threads}
        ringed = schedule_of(dict(base, schedule=hints))
        if ringed is None:
            print(f"{base['name']}: no register ring at {planned.threads} threads", flush=True)
            continue
        (specs / f"{base['name']}_p.toml").write_text(dump(dict(base, name=f"{base['name']}_p")))
        (specs / f"{base['name']}_r.toml").write_text(dump(dict(base, name=f"{base['name']}_r", schedule=hints)))
        most = unspilled(dict(base, name=f"{base['name']}_rmax"), hints, MAX_BLOCKS_PER_SM, scratch)
        if most is not None and most["schedule"]["blocks_per_sm"] > ringed.blocks_per_sm:
            (specs / f"{most['name']}.toml").write_text(dump(most))
    shutil.rmtree(scratch, ignore_errors=True)


def build_all(out: Path) -> None:
    build(ROOT, SPECS, (out / "time" / "kernels").resolve())
    checked = out / "check" / "kernels"
    checked.mkdir(parents=True)
    for package in sorted((out / "time" / "kernels").iterdir()):
        if package.name.endswith(("_r", "_rmax")):
            shutil.copytree(package, checked / package.name)


if __name__ == "__main__":
    {"select": select, "build": build_all}[sys.argv[1]](Path(sys.argv[2]))
