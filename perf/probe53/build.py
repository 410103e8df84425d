"""probe53: a block taking eight consecutive rows one after another (Schedule.row_loop), on the one-row
plan's threads, its column-major scales staged for the eight and stored as whole 32-byte sectors — against
schedule.sector_rows' blocks of several rows at once, which reach eight rows only where they fit in 512
threads. Built by planning each spec with sector_rows replaced by a row loop of ROWS on the one-row route
(the planner has no rule for it yet), into kernels/time/kernels as NAME_loop8; the same packages into
kernels/check/kernels for scripts/gpu_hunt.py check.

    .venv/bin/python perf/probe53/build.py perf/probe53/kernels SPEC...

Schedule.row_loop exists only in the prototype commit 81347f6 (reverted after this probe): run it there."""

from __future__ import annotations

import shutil
import sys
import tomllib
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
from test_injection import dump  # noqa: E402

from fusegen import plan as planning  # noqa: E402
from fusegen.cli import main as fusegen  # noqa: E402
from fusegen.ops import REGISTRY  # noqa: E402
from fusegen.spec import chain_context  # noqa: E402

ROWS = 8


def row_loop(spec, one_row):
    """In place of schedule.sector_rows: the one-row route, its block taking ROWS rows in turn."""
    context = chain_context(spec)
    if not any(REGISTRY[op.kind].sector_rows(op, context) for op in spec.op) or one_row.block_m > 1 or one_row.row_split > 1:
        return None
    return replace(one_row, row_loop=ROWS, reasons=one_row.reasons + (f"probe53: {ROWS} rows a block one after another",))


def main(out: Path, specs: list[Path]) -> None:
    written = out / "specs"
    written.mkdir(parents=True)
    for path in specs:
        spec = tomllib.loads(path.read_text())
        spec["name"] = spec["name"].removesuffix("_new").removesuffix("_planned") + f"_loop{ROWS}"
        (written / f"{spec['name']}.toml").write_text(dump(spec))
    untuned = out / "no-tuning.json"
    untuned.write_text("{}")
    planning.sector_rows = row_loop
    timed = out / "time" / "kernels"
    code = fusegen(["build", str(written), "--out", str(timed), "--tuning", str(untuned)])
    shutil.copytree(timed, out / "check" / "kernels")
    sys.exit(code)


if __name__ == "__main__":
    main(Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]])
