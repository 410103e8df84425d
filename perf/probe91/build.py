"""probe91 (session 40): padded rows streamed. The stream's ring now takes rows that do not split into its
threads' whole vectors (each thread cp.async-copies its own, the last tile masked: codegen.stream_rows),
where a hint asks; the planner's defaults do not take it yet. Every padded sweep row (2880 columns: the
sweep's slowest, bf16 LayerNorm → e5m2, among them) and padded rows of seed 3901's draw and perf/probe86's
statistics-only rows (unpinned, unhinted), each as NAME_p (the planner's fragment program) and NAME_s (variant stream on the
planner's thread count: the same padded layout, streamed). Into kernels/time/kernels; the `_s` builds also
into kernels/check/kernels.

    .venv/bin/python perf/probe91/build.py perf/probe91/kernels
    OUT=... ROUNDS=2 bash perf/probe51/call.sh perf/probe91/kernels      # on the device"""

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

SWEEP = ROOT / "perf" / "sweep"
DRAW = ROOT / "perf" / "probe84" / "kernels" / "draw" / "specs"  # scripts/gpu_hunt.py draw 64 … --seed 3901
STATS = ROOT / "perf" / "probe86" / "kernels" / "stats" / "specs"  # perf/probe86's build


def planned_schedule(spec: dict):
    try:
        return plan(parse_spec(dump(spec), spec["name"]), spec["name"]).routes[-1].schedule
    except (ChainError, SpecError):
        return None


def padded_pair(spec: dict) -> list[dict]:
    """`spec` as planned and streamed on the planner's threads, where the planner's row is padded, one row
    a block and unhinted; else nothing."""
    schedule = planned_schedule(spec)
    if spec.get("schedule") or schedule is None or schedule.padded_hidden == spec["hidden"] or schedule.block_m != 1:
        return []
    streamed = dict(spec, name=f"{spec['name']}_s", schedule={"variant": "stream", "threads": schedule.threads})
    if planned_schedule(streamed) is None:
        return []
    return [dict(spec, name=f"{spec['name']}_p"), streamed]


def main(out: Path) -> None:
    specs = out / "specs"
    specs.mkdir(parents=True)
    sources = sorted(SWEEP.glob("*.toml")) + sorted(DRAW.glob("*.toml")) + sorted(STATS.glob("*_p.toml"))
    for path in sources:
        spec = tomllib.loads(path.read_text())
        spec["name"] = spec["name"].removesuffix("_p")
        if spec.get("tokens"):
            continue  # a pinned count: too few rows to time against the copy ceiling
        for variant in padded_pair(spec):
            (specs / f"{variant['name']}.toml").write_text(dump(variant))
    probe_script("probe73").build_checked(specs, out, lambda package: package.endswith("_s"))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
