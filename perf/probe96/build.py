"""probe96 (session 41): the build keeps a launch bound that ptxas meets spilling a few words (under
schedule.PTXAS_SPILL_RELAX_BYTES) where it kept only spill-free ones, held out on a fresh draw (seed 4101).

`candidates DRAWN OUT` copies into OUT the drawn specs the raise can take (unpinned, unhinted fragment programs
of one row a block, unsplit, held in under 24 warps by the planner's bound, rows of 4 KB and more); `select
BUILT` copies into specs/ every one whose build (the tree at d941935, untuned) took such a bound — its plan.json
says "(a few words)" — and `build OLD_TREE OUT` builds each as NAME_new (the tree at d941935) and NAME_old
(OLD_TREE, the build before the change: the most blocks without a spill, or the planner's bound) into
OUT/time/kernels, the new ones also into OUT/check/kernels.

    .venv/bin/python scripts/gpu_hunt.py draw 400 /tmp/p96/draw --seed 4101 --hinted 0 --specs-only
    .venv/bin/python perf/probe96/build.py candidates /tmp/p96/draw/specs /tmp/p96/specs     # 147 specs
    (at d941935) .venv/bin/python -m fusegen build /tmp/p96/specs --out /tmp/p96/new --tuning EMPTY.json
    .venv/bin/python perf/probe96/build.py select /tmp/p96/new
    git worktree add /tmp/oldtree bd1e123
    .venv/bin/python perf/probe96/build.py build /tmp/oldtree perf/probe96/kernels
    OUT=... ROUNDS=3 BUDGET_S=330 bash perf/probe51/call.sh perf/probe96/kernels       # on the device"""

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

from fusegen.errors import ChainError, SpecError  # noqa: E402
from fusegen.model import DTYPE_BYTES  # noqa: E402
from fusegen.plan import plan  # noqa: E402
from fusegen.schedule import FULL_SM_WARPS, WARP_THREADS  # noqa: E402
from fusegen.spec import parse_spec  # noqa: E402

SPECS = Path(__file__).resolve().parent / "specs"
MARK = "(a few words) (schedule.ptxas_bound_trials)"


MIN_ROW_BYTES = 4096


def candidates(drawn: Path, out: Path) -> None:
    out.mkdir(parents=True)
    for path in sorted(drawn.glob("*.toml")):
        text = path.read_text()
        spec = tomllib.loads(text)
        if spec.get("tokens") or spec.get("schedule") or spec["hidden"] * DTYPE_BYTES[spec["dtype"]] < MIN_ROW_BYTES:
            continue
        try:
            s = plan(parse_spec(text, path.name), path.name).routes[-1].schedule
        except (ChainError, SpecError):
            continue
        if (s.variant, s.block_m, s.row_split) == ("fragment", 1, 1) and (s.blocks_per_sm or 1) * s.threads // WARP_THREADS < FULL_SM_WARPS:
            shutil.copy(path, out / path.name)
    print(f"{len(list(out.iterdir()))} specs in {out}")


def select(built: Path) -> None:
    SPECS.mkdir()
    for plan_json in sorted(built.glob("*/plan.json")):
        p = json.loads(plan_json.read_text())
        if any(MARK in reason for route in p["routes"] for reason in route["schedule"]["reasons"]):
            (SPECS / Path(p["spec_file"]).name).write_text(Path(p["spec_file"]).read_text())
    print(f"{len(list(SPECS.iterdir()))} specs in {SPECS}")


def build_both(old_tree: Path, out: Path, chosen: Path = SPECS) -> None:
    """Every spec of `chosen` as NAME_old (built by OLD_TREE) and NAME_new (this tree), untuned; both into
    OUT/time/kernels, the new ones also into OUT/check/kernels (perf/probe51/call.sh's layout)."""
    for suffix in ("old", "new"):
        specs = out / f"specs_{suffix}"
        specs.mkdir(parents=True)
        for path in sorted(chosen.glob("*.toml")):
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
    {"candidates": candidates, "select": select, "build": build_both}[sys.argv[1]](*map(Path, sys.argv[2:]))
