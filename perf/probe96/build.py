"""probe96 (session 41): the build keeps a launch bound that ptxas meets spilling a few words (under
schedule.PTXAS_SPILL_RELAX_BYTES) where it kept only spill-free ones, held out on a fresh draw (seed 4101).

`select BUILT` copies into specs/ every drawn spec whose build (this tree, untuned) took such a bound — its
plan.json says "(a few words)" — and `build OLD_TREE OUT` builds each as NAME_new (this tree) and NAME_old
(OLD_TREE, the build before the change: the most blocks without a spill, or the planner's bound) into
OUT/time/kernels, the new ones also into OUT/check/kernels.

    .venv/bin/python scripts/gpu_hunt.py draw 400 /tmp/p96/draw --seed 4101 --hinted 0 --specs-only
    (the unpinned, unhinted fragment programs of one row a block held in under 24 warps, rows of 4 KB and more,
     built by this tree into /tmp/p96/new)
    .venv/bin/python perf/probe96/build.py select /tmp/p96/new
    git worktree add /tmp/oldtree bd1e123
    .venv/bin/python perf/probe96/build.py build /tmp/oldtree perf/probe96/kernels
    OUT=... bash perf/probe96/call.sh                                                  # on the device"""

from __future__ import annotations

import json
import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "perf" / "probe50"))
from build_rules import build  # noqa: E402  (probe50's untuned build in a given tree)
from test_injection import dump  # noqa: E402

SPECS = Path(__file__).resolve().parent / "specs"
MARK = "(a few words) (schedule.ptxas_bound_trials)"


def select(built: Path) -> None:
    SPECS.mkdir()
    for plan_json in sorted(built.glob("*/plan.json")):
        p = json.loads(plan_json.read_text())
        if any(MARK in reason for route in p["routes"] for reason in route["schedule"]["reasons"]):
            (SPECS / Path(p["spec_file"]).name).write_text(Path(p["spec_file"]).read_text())
    print(f"{len(list(SPECS.iterdir()))} specs in {SPECS}")


def build_both(old_tree: Path, out: Path) -> None:
    for suffix in ("old", "new"):
        specs = out / f"specs_{suffix}"
        specs.mkdir(parents=True)
        for path in sorted(SPECS.glob("*.toml")):
            spec = tomllib.loads(path.read_text())
            spec["name"] = f"{spec['name']}_{suffix}"
            (specs / f"{spec['name']}.toml").write_text(dump(spec))
        build(old_tree if suffix == "old" else ROOT, specs.resolve(), (out / f"built_{suffix}").resolve())
    timed, checked = out / "time" / "kernels", out / "check" / "kernels"
    timed.mkdir(parents=True)
    checked.mkdir(parents=True)
    for suffix in ("old", "new"):
        for package in (out / f"built_{suffix}").iterdir():
            if (package / "plan.json").is_file():
                shutil.copytree(package, timed / package.name)
                if suffix == "new":
                    shutil.copytree(package, checked / package.name)


if __name__ == "__main__":
    if sys.argv[1] == "select":
        select(Path(sys.argv[2]))
    else:
        build_both(Path(sys.argv[2]), Path(sys.argv[3]))
