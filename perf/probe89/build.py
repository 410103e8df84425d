"""probe89 (session 40): do column-major scale stores cost by their count? perf/probe84's 14 sector rows
(column-major FP8 scales in groups of 8–16, rows of 3000–10240 columns) as NAME_p (the planner's blocks of
2–8 rows, schedule.sector_rows: runs of 8–32 bytes), NAME_8 (8 rows a block, whole 32-byte sectors, on
512 threads where the planner takes it, else 1024) and NAME_r (the planner's schedule of the same chain
with row-major scales: the floor the layout costs against). Into kernels/time/kernels; the `_8` builds
also into kernels/check/kernels.

    .venv/bin/python perf/probe89/build.py perf/probe84/kernels/pair/specs perf/probe89/kernels
    OUT=... ROUNDS=2 bash perf/probe51/call.sh perf/probe89/kernels      # on the device"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "perf" / "proto"))
from probe_scripts import probe_script  # noqa: E402  (a sibling script)
from test_injection import dump  # noqa: E402

probe84 = probe_script("probe84")


def variants(spec: dict) -> list[dict]:
    """`spec` as the planner plans it, on blocks of 8 rows, and with row-major scales."""
    base = spec["name"].removesuffix("_p")
    found = [dict(spec, name=f"{base}_p")]
    for threads in (512, 1024):
        eight = dict(spec, name=f"{base}_8", schedule=dict(spec.get("schedule", {}), block_m=8, threads=threads))
        if probe84.planned_route(eight) is not None:
            found.append(eight)
            break
    ops = [dict(op, scale_layout="row") if op["kind"] == "quant_fp8" else op for op in spec["op"]]
    found.append(dict(spec, name=f"{base}_r", op=ops))
    return found


def main(pairs: Path, out: Path) -> None:
    specs = out / "specs"
    specs.mkdir(parents=True)
    for path in sorted(pairs.glob("sector84_*_p.toml")):
        for spec in variants(tomllib.loads(path.read_text())):
            (specs / f"{spec['name']}.toml").write_text(dump(spec))
    probe_script("probe73").build_checked(specs, out, lambda package: package.endswith("_8"))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
