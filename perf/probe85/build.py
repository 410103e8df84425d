"""probe85: the held-out check of the lowered spilling bounds (schedule.PTXAS_SPILL_RELAX_BYTES, fitted on
perf/probe84's seven spilled programs). Fresh draws (scripts/random_hunt.py's, unhinted, seeds SEEDS) whose
planner route of many tokens is a fragment or reread program bounded at two blocks an SM or more, rows of
2048 columns and up, are built with this tree; those whose build lowered a bound (plan.json: "lowered to")
are kept as NAME_new, and built as NAME_old in OLD_TREE (the tree before the rule, which keeps the spilling
bound), both into kernels/time/kernels; the new builds also into kernels/check/kernels.

    git worktree add /tmp/old85 c232e92
    .venv/bin/python perf/probe85/build.py /tmp/old85 perf/probe85/kernels
    OUT=... ROUNDS=2 bash perf/probe51/call.sh perf/probe85/kernels      # on the device"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "perf" / "proto"))
sys.path.insert(0, str(ROOT / "perf" / "probe50"))
from build_rules import build  # noqa: E402  (probe50's untuned build in a given tree)
from probe_scripts import probe_script  # noqa: E402  (a sibling script)
from test_injection import dump  # noqa: E402

SEEDS = (8501, 8502, 8503)
DRAWN = 40  # candidates a seed
WIDTHS = (2048, 2560, 2880, 3072, 3584, 4096, 5120, 6144, 7168, 8192, 10240, 12288, 14336, 16384, 18432, 24576)


def bounded_at_two_or_more(spec: dict) -> bool:
    route = probe_script("probe84").planned_route(spec)
    return (
        spec["hidden"] >= 2048
        and route is not None
        and route.schedule.variant in ("fragment", "reread")
        and (route.schedule.blocks_per_sm or 1) >= 2
    )


def lowered_pairs(old_tree: Path, out: Path, keep, seeds: tuple[int, ...], drawn: int, widths, prefix: str) -> None:
    """`drawn` specs a seed that `keep` keeps, built with this tree into out/scan; those whose build lowered
    a bound built again as NAME_old in `old_tree` and NAME_new here, both into out/time/kernels, the new
    ones also into out/check/kernels."""
    scan = out / "scan"
    (scan / "specs").mkdir(parents=True)
    for seed in seeds:
        for spec in probe_script("probe51").drawn_specs(seed, drawn, keep, widths, prefix):
            (scan / "specs" / f"{spec['name']}.toml").write_text(dump(spec))
    build(ROOT, (scan / "specs").resolve(), (scan / "kernels").resolve())
    lowered = sorted(
        p.name
        for p in (scan / "kernels").iterdir()
        if (p / "plan.json").is_file()
        and any(r["schedule"]["reasons"][-1].startswith("lowered to") for r in json.loads((p / "plan.json").read_text())["routes"])
    )
    print(f"{len(lowered)} lowered: {' '.join(lowered)}", flush=True)
    for suffix in ("old", "new"):
        specs = out / f"specs_{suffix}"
        specs.mkdir()
        for name in lowered:
            text = (scan / "specs" / f"{name}.toml").read_text()
            (specs / f"{name}_{suffix}.toml").write_text(text.replace(f'name = "{name}"', f'name = "{name}_{suffix}"', 1))
    timed = out / "time" / "kernels"
    checked = out / "check" / "kernels"
    checked.mkdir(parents=True)
    build(old_tree, (out / "specs_old").resolve(), timed.resolve())
    build(ROOT, (out / "specs_new").resolve(), (out / "new").resolve())
    for package in sorted(p for p in (out / "new").iterdir() if (p / "plan.json").is_file()):
        shutil.copytree(package, timed / package.name)
        shutil.copytree(package, checked / package.name)


if __name__ == "__main__":
    lowered_pairs(Path(sys.argv[1]), Path(sys.argv[2]), bounded_at_two_or_more, SEEDS, DRAWN, WIDTHS, "spill85")
