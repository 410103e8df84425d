"""probe62's GPU check, built on the CPU for the next device call: the 24-warp program (scan.py's) against the
planner's on every row the planner's register estimate keeps to at most FEW_WARPS warps an SM — the rows a
residency rule toward 24 warps would change — from the committed sweep, probe58's and probe59's draws and a
fresh draw (seed 6201, 16 widths none of them had), each as NAME_old (the planner's program) and NAME_new
(the 24-warp one: 768 ÷ threads blocks an SM, side inputs staged where the estimate fits the bound's
registers, else read where used), untuned, into kernels/time/kernels (perf/proto/probe_time.py times them
and compares their outputs bit for bit), the _new ones also into kernels/check/kernels.

    .venv/bin/python perf/probe62/build.py perf/probe62/kernels        (--list: print the selection only)"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "perf" / "proto"))
from probe_scripts import probe_script  # noqa: E402  (a sibling script)

scan = probe_script("probe62", "scan")

from fusegen.plan import plan, staged_inputs  # noqa: E402
from fusegen.schedule import WARP_THREADS, fragment_registers, resident_blocks  # noqa: E402
from fusegen.spec import parse_spec  # noqa: E402

SEED = 6201
WIDTHS = (2432, 3328, 3712, 4736, 5504, 6016, 6528, 7040, 7552, 8064, 8576, 9472, 9984, 11520, 13312, 15872)
FEW_WARPS = 18


def estimated_warps(base: dict) -> int:
    """Warps an SM the planner's program of many tokens keeps by its register estimate."""
    route = plan(parse_spec(scan.probe52.dump(base), "spec.toml"), "spec.toml").routes[-1]
    s = route.schedule
    blocks = s.blocks_per_sm if s.blocks_per_sm > 1 else resident_blocks(fragment_registers(s, staged_inputs(route.stages)), s.threads)
    return blocks * s.threads // WARP_THREADS


def selected() -> list[tuple[dict, dict]]:
    bases = scan.probe60.bases() + scan.probe60.probe58.drawn(SEED, WIDTHS, "held62")
    chosen = []
    for base in bases:
        if base["name"].startswith(("deepseek", "gemma", "llama", "qwen")):
            continue
        hints = scan.full_sm_hints(base)
        if hints is not None and estimated_warps(base) <= FEW_WARPS:
            chosen.append((base, hints))
    return chosen


def main(out: Path) -> None:
    chosen = selected()
    for base, hints in chosen:
        print(base["name"], estimated_warps(base), hints)
    print(f"{len(chosen)} rows")
    if out.name == "--list":
        return
    specs = out / "specs"
    specs.mkdir(parents=True)
    for base, hints in chosen:
        (specs / f"{base['name']}_old.toml").write_text(scan.probe52.dump(dict(base, name=f"{base['name']}_old")))
        new = dict(base, name=f"{base['name']}_new", schedule=dict(base.get("schedule", {}), **hints))
        (specs / f"{base['name']}_new.toml").write_text(scan.probe52.dump(new))
    timed = out / "time" / "kernels"
    scan.probe52.build(ROOT, specs.resolve(), timed.resolve())
    checked = out / "check" / "kernels"
    checked.mkdir(parents=True)
    for package in timed.glob("*_new"):
        shutil.copytree(package, checked / package.name)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
