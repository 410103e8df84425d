"""probe52: the sector_rows rule (schedule.sector_rows, quant_fp8.staged_scales) checked on specs it was not
fitted to — a fresh draw of column-major scales in groups of 8–32 — and on probe51's rows it was fitted to:
every spec whose plan the rule changes, as NAME_old (the tree before it) and NAME_new (this tree), both
untuned, into kernels/time/kernels (perf/proto/probe_time.py times them and compares their outputs bit for
bit), the _new ones also into kernels/check/kernels (scripts/gpu_hunt.py check).

    git worktree add /tmp/oldwt 266c4a9
    .venv/bin/python perf/probe52/build.py /tmp/oldwt perf/probe52/kernels"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "perf" / "probe51"))
sys.path.insert(0, str(ROOT / "perf" / "probe50"))
from build import column_group_scales, drawn_specs  # noqa: E402  (probe51's draws)
from build_rules import COLUMN_SCALES, build  # noqa: E402
from test_injection import dump  # noqa: E402  (on the path probe51's build put there)

SEED = 5102
DRAWN = 24
FITTED_SEED, FITTED = 5101, 12  # probe51's draw


def small_groups(spec: dict) -> bool:
    return column_group_scales(spec) and all(
        op.get("group_size", "token") == "token" or op["group_size"] <= 32 for op in spec["op"] if op["kind"] == "quant_fp8"
    )


def main(old_tree: Path, out: Path) -> None:
    import tomllib

    bases = [tomllib.loads((ROOT / p).read_text()) for p in COLUMN_SCALES] + drawn_specs(FITTED_SEED, FITTED)
    build_changed(old_tree, out, bases + drawn_specs(SEED, DRAWN, small_groups))


def schedules_differ(old: Path, new: Path) -> bool:
    """Whether two built packages plan different schedules for any route."""
    schedules = [[r["schedule"] for r in json.loads((p / "plan.json").read_text())["routes"]] for p in (old, new)]
    return schedules[0] != schedules[1]


def build_changed(old_tree: Path, out: Path, bases: list[dict], keep_new: frozenset[str] = frozenset(), differs=schedules_differ) -> None:
    """Each spec as NAME_old (`old_tree`) and NAME_new (this tree); the pairs that `differs` (by default: whose
    schedules differ) kept, and the NAME_new of the specs named in `keep_new` whether or not they differ."""
    old, new = out / "specs_old", out / "specs_new"
    old.mkdir(parents=True)
    new.mkdir()
    for base in bases:
        for directory, suffix in ((old, "old"), (new, "new")):
            (directory / f"{base['name']}_{suffix}.toml").write_text(dump(dict(base, name=f"{base['name']}_{suffix}")))
    timed = out / "time" / "kernels"
    build(ROOT, new.resolve(), timed.resolve())
    build(old_tree, old.resolve(), (out / "built_old").resolve())
    checked = out / "check" / "kernels"
    checked.mkdir(parents=True)
    for package in sorted((out / "built_old").iterdir()):
        if not (package / "plan.json").is_file():
            continue
        twin = timed / package.name.replace("_old", "_new")
        if not differs(package, twin):
            if package.name.removesuffix("_old") not in keep_new:
                shutil.rmtree(twin)
            continue
        package.rename(timed / package.name)
        shutil.copytree(twin, checked / twin.name)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
