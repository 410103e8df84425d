"""probe123 (session 62): a spilling bound lowered to one block an SM, held out against the bound kept.

`fusegen build` lowers a planner's fragment or reread program that ptxas spilled PTXAS_SPILL_RELAX_BYTES (32) or
more under its bound (NOTES.md step 63). At 32–40 bytes the evidence splits: lowering gained on three rows of
perf/probe85 (+6 … +11 %) and lost on three — probe85's bf16 FP8 g64 24576 (−3 %) and fp16 LayerNorm → cache RoPE →
FP8 g8 column-major 16384 (−5 %), and perf/probe122's fp16 LayerNorm → rescale → RoPE → FP8 24576 (−30 %: 0.74 × copy
lowered, 0.96 kept, on an H100). The three losses lower to one block an SM and write nothing in the activations'
dtype: that one block loads nothing while it reduces, where two keep a row in flight. Held out here:

    .venv/bin/python perf/probe123/build.py

draws DRAWN unhinted specs a seed (scripts/random_hunt.py's, rows of 2048 columns and up) whose planner route of
many tokens is a fragment program bounded at two blocks an SM or more — of SEEDS any, of FP8_ONLY_SEEDS only those
writing nothing in the activations' dtype, the lead's rows — builds them untuned, and for each the build lowered
writes NAME_old (the spec as drawn: the bound lowered) and NAME_new (the same spec with the planner's schedule of
many tokens as hints, which the build never lowers: `fusegen tune`'s program as planned) into kernels/time/kernels, perf/proto/probe_time.py's pairs;
kernels/lowered.txt gives each pair's spill, its bounds planned and lowered, and whether the kernel writes a row in
the activations' dtype (Y, residual_out)."""

from __future__ import annotations

import json
import re
import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "perf/probe123"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "perf" / "proto"))
sys.path.insert(0, str(ROOT / "perf" / "probe50"))
from build_rules import build  # noqa: E402  (an untuned build in a given tree)
from probe_scripts import probe_script  # noqa: E402
from test_injection import dump  # noqa: E402

from fusegen.tune import _concrete  # noqa: E402

SEEDS = (12301, 12302, 12303)
FP8_ONLY_SEEDS = (12304, 12305, 12306, 12307)
DRAWN = 60
LOWERED = re.compile(r"lowered to (\d+) block\(s\) per SM by compiling it: under the planner's bound of (\d+) ptxas spilled (\d+) bytes")


def lowering(package: Path) -> tuple[int, int, int, bool] | None:
    """(spilled bytes, planned blocks, lowered blocks, writes a row in the activations' dtype) where the build
    lowered the route of many tokens, else None."""
    plan = json.loads((package / "plan.json").read_text())
    found = LOWERED.match(plan["routes"][-1]["schedule"]["reasons"][-1])
    if found is None:
        return None
    lowered, planned, spilled = (int(g) for g in found.groups())
    return spilled, planned, lowered, any(o["dtype"] == plan["dtype"] for o in plan["outputs"])


def main() -> None:
    kernels = HERE / "kernels"
    shutil.rmtree(kernels, ignore_errors=True)
    scan = kernels / "scan"
    (scan / "specs").mkdir(parents=True)
    probe84, probe85 = probe_script("probe84"), probe_script("probe85")

    def bounded_fragment(spec: dict) -> bool:
        return probe85.bounded_at_two_or_more(spec) and probe84.planned_route(spec).schedule.variant == "fragment"

    def fp8_only(spec: dict) -> bool:
        return bounded_fragment(spec) and all(t.dtype != spec["dtype"] for t in probe84.planned(spec).outputs)

    for seeds, keep in ((SEEDS, bounded_fragment), (FP8_ONLY_SEEDS, fp8_only)):
        for seed in seeds:
            for spec in probe_script("probe51").drawn_specs(seed, DRAWN, keep, probe85.WIDTHS, "spill123"):
                (scan / "specs" / f"{spec['name']}.toml").write_text(dump(spec))
    build(ROOT, (scan / "specs").resolve(), (scan / "kernels").resolve())
    lowered = {p.name: found for p in sorted((scan / "kernels").iterdir()) if (p / "plan.json").is_file() and (found := lowering(p))}
    specs = {suffix: kernels / f"specs_{suffix}" for suffix in ("old", "new")}
    for directory in specs.values():
        directory.mkdir()
    lines = []
    for name, (spilled, planned, down, writes_row) in lowered.items():
        spec = tomllib.loads((scan / "specs" / f"{name}.toml").read_text())
        (specs["old"] / f"{name}_old.toml").write_text(dump(dict(spec, name=f"{name}_old")))
        as_planned = _concrete(probe84.planned_route(spec).schedule)  # as `fusegen tune` times it
        assert as_planned["blocks_per_sm"] == planned, (name, as_planned)
        kept = dict(spec, name=f"{name}_new", schedule=dict(spec.get("schedule", {}), **as_planned))
        (specs["new"] / f"{name}_new.toml").write_text(dump(kept))
        lines.append(f"{name} spilled {spilled} B, {planned} -> {down} blocks, {'writes a row' if writes_row else 'FP8 only'}")
    (kernels / "lowered.txt").write_text("\n".join(lines) + "\n")
    print(f"{len(lowered)} lowered of {sum(1 for _ in (scan / 'specs').iterdir())}:\n" + "\n".join(lines), flush=True)
    timed = kernels / "time" / "kernels"
    timed.mkdir(parents=True)
    for suffix, directory in specs.items():
        built = kernels / f"built_{suffix}"
        build(ROOT, directory.resolve(), built.resolve())
        for package in sorted(p for p in built.iterdir() if (p / "plan.json").is_file()):
            package.rename(timed / package.name)
        shutil.rmtree(built)
    shutil.rmtree(scan / "kernels")


if __name__ == "__main__":
    main()
