"""probe79: rows under 2 KB that gather a cache row, with 16 or more values a thread on one warp — which
schedule.short_rows_block_m keeps at one row a block (session 18's perf/probe21, on the kernels of then) —
at one, two and four rows a block on the current tree. Draws such rows (random_hunt's draws, unhinted,
half at the widths below) plus the model library's MLA kv_a, each as NAME_r1 (the planner's own), NAME_r2
and NAME_r4 (block_m pinned, the rest auto), built untuned into kernels/time/kernels; the r2 builds also into
kernels/check/kernels for scripts/gpu_hunt.py check.

    .venv/bin/python perf/probe79/build.py perf/probe79/kernels/rows
    OUT=... ROUNDS=2 bash perf/probe51/call.sh perf/probe79/kernels/rows      # on the device"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "perf" / "proto"))
from probe_scripts import probe_script  # noqa: E402  (a sibling script)
from test_injection import dump  # noqa: E402

from fusegen.errors import ChainError, SpecError  # noqa: E402
from fusegen.model import DTYPE_BYTES  # noqa: E402
from fusegen.plan import plan  # noqa: E402
from fusegen.schedule import SHORT_ROWS_BLOCK_BYTES, STREAM_MIN_ELEMS_PER_THREAD  # noqa: E402
from fusegen.spec import parse_spec  # noqa: E402

SEED, DRAWN = 7901, 14
WIDTHS = (288, 320, 384, 448, 512, 576, 640, 768, 896, 960, 1000)
ROWS = (1, 2, 4)


def one_warp_gathering(spec: dict) -> bool:
    """A short row that gathers a cache row and that the planner holds on one warp of 16+ values a thread,
    one row a block."""
    if not any(op["kind"] == "rope" and op.get("source") == "cache" for op in spec["op"]):
        return False
    if spec["hidden"] * DTYPE_BYTES[spec["dtype"]] >= SHORT_ROWS_BLOCK_BYTES:
        return False
    try:
        schedule = plan(parse_spec(dump(spec), spec["name"]), spec["name"]).routes[-1].schedule
    except (ChainError, SpecError):
        return False
    return schedule.threads == 32 and schedule.block_m == 1 and schedule.elems_per_thread >= STREAM_MIN_ELEMS_PER_THREAD


def main(out: Path) -> None:
    specs = out / "specs"
    specs.mkdir(parents=True)
    kv_a = dict(tomllib.loads((ROOT / "specs/models/deepseek-v3-mla-kv-a.toml").read_text()), name="kv_a")
    bases = [kv_a, *probe_script("probe51").drawn_specs(SEED, DRAWN, one_warp_gathering, WIDTHS, "gather")]
    for base in bases:
        for rows in ROWS:
            spec = dict(base, name=f"{base['name']}_r{rows}")
            if rows > 1:
                spec["schedule"] = dict(base.get("schedule", {}), block_m=rows)
            (specs / f"{spec['name']}.toml").write_text(dump(spec))
    probe_script("probe73").build_checked(specs, out, lambda package: package.endswith("_r2"))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
