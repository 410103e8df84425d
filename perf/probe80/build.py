"""probe80: two held-out families, each spec under pinned schedules, built untuned into kernels/time/kernels
(the first pinned build of each also into kernels/check/kernels for scripts/gpu_hunt.py check).

- gather: rows under 2 KB that gather a cache row, one warp of at most 16 values a thread (perf/probe79: at
  exactly 16, two or four rows a block won on six of six), at one, two and four rows a block (_r1, _r2, _r4).
- warp: 16-bit rows of 2–2.5 KB (and float32 of the same bytes) the planner holds on one warp, one row a block
  (perf/probe79's draw: fp16 LayerNorm 1024 0.76 × copy): the planner's (_p), two warps a row (_t64), two rows
  a block (_r2).

    .venv/bin/python perf/probe80/build.py perf/probe80/kernels
    OUT=... ROUNDS=2 bash perf/probe51/call.sh perf/probe80/kernels      # on the device"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "perf" / "proto"))
from probe_scripts import probe_script  # noqa: E402  (a sibling script)
from test_injection import dump  # noqa: E402

from fusegen.errors import ChainError, SpecError  # noqa: E402
from fusegen.model import DTYPE_BYTES  # noqa: E402
from fusegen.plan import plan  # noqa: E402
from fusegen.schedule import SHORT_ROWS_BLOCK_BYTES  # noqa: E402
from fusegen.spec import parse_spec  # noqa: E402

GATHER_SEED, GATHER_DRAWN = 8001, 14
GATHER_WIDTHS = (128, 160, 192, 256, 288, 384, 448, 512, 640, 768, 896, 1000)
WARP_SEED, WARP_DRAWN = 8002, 14
WARP_WIDTHS = (512, 544, 576, 600, 640, 1024, 1056, 1088, 1152, 1200, 1280)


def planned(spec: dict):
    try:
        return plan(parse_spec(dump(spec), spec["name"]), spec["name"]).routes[-1].schedule
    except (ChainError, SpecError):
        return None


def gathers(spec: dict) -> bool:
    return any(op["kind"] == "rope" and op.get("source") == "cache" for op in spec["op"])


def short_gathering(spec: dict) -> bool:
    if not gathers(spec) or spec["hidden"] * DTYPE_BYTES[spec["dtype"]] >= SHORT_ROWS_BLOCK_BYTES:
        return False
    schedule = planned(spec)
    return schedule is not None and schedule.threads * schedule.block_m <= 64 and schedule.elems_per_thread <= 16


def one_warp_row(spec: dict) -> bool:
    if not 2048 <= spec["hidden"] * DTYPE_BYTES[spec["dtype"]] <= 2560:
        return False
    schedule = planned(spec)
    return schedule is not None and schedule.threads == 32 and schedule.block_m == 1 and schedule.variant == "fragment"


def pinned(base: dict, suffix: str, **hints) -> dict:
    spec = dict(base, name=f"{base['name']}_{suffix}")
    if hints:
        spec["schedule"] = dict(base.get("schedule", {}), **hints)
    return spec


def main(out: Path) -> None:
    specs = out / "specs"
    specs.mkdir(parents=True)
    drawn = probe_script("probe51").drawn_specs
    wanted = []
    for base in drawn(GATHER_SEED, GATHER_DRAWN, short_gathering, GATHER_WIDTHS, "gather"):
        wanted += [pinned(base, "r1", block_m=1), pinned(base, "r2", block_m=2), pinned(base, "r4", block_m=4)]
    for base in drawn(WARP_SEED, WARP_DRAWN, one_warp_row, WARP_WIDTHS, "warp"):
        wanted += [pinned(base, "p"), pinned(base, "t64", threads=64), pinned(base, "r2", block_m=2)]
    for spec in wanted:
        if planned(spec) is not None:
            (specs / f"{spec['name']}.toml").write_text(dump(spec))
    probe_script("probe73").build_checked(specs, out, lambda package: package.endswith(("_r2", "_t64")))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
