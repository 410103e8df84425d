"""probe84: two held-out questions for one device call, each spec as the planner plans it (NAME_p) and under one
other pinned schedule, untuned into kernels/time/kernels (the pinned builds also into kernels/check/kernels).

- stats: chains that write only per-token statistics (a norm's mean or rstd: no row, no FP8), whose planner
  program is a fragment one. perf/probe82: fp16 LayerNorm 1024 writing mean and rstd ran 0.77 × copy on one
  warp a row and 0.92 streamed. NAME_s: variant stream, the rest auto.
- sector: column-major scales in groups the planner stages over several rows a block (schedule.sector_rows),
  rows of 2048 columns and more. perf/probe79's fp16 6656 chain ran 0.65 × copy on 4 rows × 128 threads at 96
  registers: one block an SM. NAME_h: half the rows a block on the same threads a row.
- spill: the planner's fragment programs that ptxas spilled under their launch bound in this probe's builds
  (SPILLED: five of the sector rows, two of the fresh draw's specs, seed 3901). NAME_b: the same program
  (variant, threads, rows a block, prefetch pinned) under a bound of one block fewer.

    .venv/bin/python perf/probe84/build.py perf/probe84/kernels
    OUT=... ROUNDS=2 bash perf/probe51/call.sh perf/probe84/kernels      # on the device"""

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
from fusegen.plan import plan  # noqa: E402
from fusegen.spec import parse_spec  # noqa: E402

STATS_SEED, STATS_DRAWN = 8401, 14
STATS_WIDTHS = (512, 768, 1024, 1536, 2048, 2560, 3072, 4096, 5120, 8192)
SECTOR_SEED, SECTOR_DRAWN = 8402, 14
SECTOR_WIDTHS = (2048, 2880, 3584, 4096, 5120, 6144, 6656, 7168, 8192, 10240, 12288)
STATISTICS = {"mean", "rstd"}
DRAW = ROOT / "perf" / "probe84" / "kernels" / "draw" / "specs"  # scripts/gpu_hunt.py draw 64 … --seed 3901
SPILLED = ("sector84_8402_00", "sector84_8402_01", "sector84_8402_08", "sector84_8402_09", "sector84_8402_10")
SPILLED_DRAWN = ("hunt_3901_018", "hunt_3901_051")  # 046 spilled too, a reread program: no bound hint for it


def planned(spec: dict):
    try:
        return plan(parse_spec(dump(spec), spec["name"]), spec["name"])
    except (ChainError, SpecError):
        return None


def planned_route(spec: dict):
    found = planned(spec)
    return None if found is None else found.routes[-1]


def writes_only_statistics(spec: dict) -> bool:
    found = planned(spec)
    if found is None or found.routes[-1].schedule.variant != "fragment":
        return False
    return {t.arg for t in found.outputs} <= STATISTICS


def staged_sectors(spec: dict) -> bool:
    route = planned_route(spec)
    return (
        spec["hidden"] >= 2048
        and route is not None
        and route.schedule.block_m > 1
        and any("staged in shared memory" in why for why in route.schedule.reasons)
    )


def main(out: Path) -> None:
    specs = out / "specs"
    specs.mkdir(parents=True)
    drawn = probe_script("probe51").drawn_specs
    pinned = []
    for base in drawn(STATS_SEED, STATS_DRAWN, writes_only_statistics, STATS_WIDTHS, "stats84"):
        pinned.append((base, "s", {"variant": "stream"}))
    for base in drawn(SECTOR_SEED, SECTOR_DRAWN, staged_sectors, SECTOR_WIDTHS, "sector84"):
        schedule = planned_route(base).schedule
        pinned.append((base, "h", {"block_m": schedule.block_m // 2, "threads": schedule.threads // 2}))
    sectors = {base["name"]: base for base, suffix, _ in pinned if suffix == "h"}
    drawn_spilled = [
        dict(tomllib.loads((DRAW / f"{name}.toml").read_text()), name=name.replace("hunt", "spill84")) for name in SPILLED_DRAWN
    ]
    for base in [sectors[name] for name in SPILLED] + drawn_spilled:
        schedule = planned_route(base).schedule
        relaxed = {
            "variant": schedule.variant,
            "threads": schedule.threads,
            "block_m": schedule.block_m,
            "prefetch": schedule.prefetch,
            "blocks_per_sm": schedule.blocks_per_sm - 1,
        }
        pinned.append((base, "b", relaxed))
    for base, suffix, hints in pinned:
        hinted = dict(base, name=f"{base['name']}_{suffix}", schedule=dict(base.get("schedule", {}), **hints))
        for spec in (dict(base, name=f"{base['name']}_p"), hinted):
            if planned_route(spec) is not None:
                (specs / f"{spec['name']}.toml").write_text(dump(spec))
    probe_script("probe73").build_checked(specs, out, lambda package: not package.endswith("_p"))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
