"""probe97 (session 41): does the issue ratio (perf/proto/issue_ratio.py) tell where the register ring wins?
perf/probe94–96 found every alternative program winning where the planner's ran slow and losing where it ran
at 0.93+; over probe94's and probe96's 31 fragment and reread programs, those with an issue ratio of 0.58 or
more ran 0.65–0.96 × copy (median 0.88) and those under 0.5 0.91–0.98 but one. Held out here on a fresh draw
(seed 4201, 300 unhinted specs; the 129 unpinned fragment programs of one row a block held in under 24 warps,
rows of 4 KB and more, built by this tree into PLANNER): each row with an issue ratio of HIGH or more, and
CONTROL rows under LOW, as NAME_p (the planner's program) and NAME_r (variant stream, ring registers, the
planner's threads, at the most blocks an SM that ptxas compiles without a spill).

    .venv/bin/python scripts/gpu_hunt.py draw 300 /tmp/p97/draw --seed 4201 --hinted 0 --specs-only
    .venv/bin/python perf/probe96/build.py candidates /tmp/p97/draw/specs /tmp/p97/specs     # 129 specs
    .venv/bin/python -m fusegen build /tmp/p97/specs --out /tmp/p97/planner --tuning EMPTY.json
    .venv/bin/python perf/probe97/build.py select /tmp/p97/planner      # ratios.json, specs/
    .venv/bin/python perf/probe97/build.py build perf/probe97/kernels /tmp/p97/planner
    OUT=... ROUNDS=3 BUDGET_S=300 bash perf/probe51/call.sh perf/probe97/kernels   # on the device"""

from __future__ import annotations

import json
import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "perf" / "proto"))
sys.path.insert(0, str(ROOT / "perf" / "probe50"))
from build_rules import build  # noqa: E402
from issue_ratio import issue_ratio  # noqa: E402
from probe_scripts import probe_script  # noqa: E402
from test_injection import dump  # noqa: E402

from fusegen.schedule import MAX_BLOCKS_PER_SM  # noqa: E402

HIGH, LOW, CONTROLS = 0.60, 0.45, 6
SPECS = HERE / "specs"


def select(planner: Path) -> None:
    ratios = {}
    for kernel in sorted(planner.iterdir()):
        if (kernel / "plan.json").is_file():
            ratios[kernel.name] = round(issue_ratio(kernel)[0], 3)
    (HERE / "ratios.json").write_text(json.dumps(ratios, indent=1) + "\n")
    high = [name for name, ratio in ratios.items() if ratio >= HIGH]
    control = [name for name, ratio in ratios.items() if ratio < LOW][:CONTROLS]
    print(f"{len(ratios)} programs, {len(high)} at {HIGH}+, controls {control}", flush=True)
    SPECS.mkdir()
    scratch = HERE / "trials"
    unspilled = probe_script("probe88").unspilled
    for name in high + control:
        p = json.loads((planner / name / "plan.json").read_text())
        base = tomllib.loads(Path(p["spec_file"]).read_text())
        hints = {"variant": "stream", "ring": "registers", "threads": p["routes"][-1]["schedule"]["threads"]}
        ring = unspilled(dict(base, name=f"{name}_r"), hints, MAX_BLOCKS_PER_SM, scratch)
        if ring is None:
            print(f"{name}: no register ring without a spill", flush=True)
            continue
        (SPECS / f"{name}_p.toml").write_text(dump(dict(base, name=f"{name}_p")))
        (SPECS / f"{name}_r.toml").write_text(dump(ring))
        print(f"{name}: ring at {ring['schedule']['blocks_per_sm']} blocks", flush=True)
    shutil.rmtree(scratch, ignore_errors=True)


def build_all(out: Path, planner: Path) -> None:
    """The pairs, and (timed alone, as built into `planner`) the planner programs of ratios between LOW and
    HIGH: whether the ratio orders the planner's own speed."""
    build(ROOT, SPECS.resolve(), (out / "time" / "kernels").resolve())
    ratios = json.loads((HERE / "ratios.json").read_text())
    for name, ratio in ratios.items():
        if LOW <= ratio < HIGH:
            shutil.copytree(planner / name, out / "time" / "kernels" / name)
    checked = out / "check" / "kernels"
    checked.mkdir(parents=True)
    for package in sorted((out / "time" / "kernels").iterdir()):
        if package.name.endswith("_r"):
            shutil.copytree(package, checked / package.name)


if __name__ == "__main__":
    {"select": select, "build": build_all}[sys.argv[1]](*map(Path, sys.argv[2:]))
