"""probe74: fragment programs an SM holds in few warps, bounded to more blocks where ptxas does not spill.
perf/probe73's quick-tune candidates for probe70's rows still under 0.90 found a tighter launch bound than
the planner's faster on five of ten (bf16 QK-norm → cache RoPE 4608: 0.86 → 0.96 at six blocks of 192
threads, 55 registers; fp32 RMSNorm → cache RoPE → FP8 8192: 0.88 → 0.99 at four of 256, 64; fp16 LayerNorm
→ cache RoPE → FP8 7168: 0.88 → 0.93 at five of 128, 96), each where ptxas met the bound without a spill,
and neutral or slower where it spilled. The planner sizes its bounds from its register estimate; ptxas's own
count (compile.ptxas_resources, on the CPU) says how many blocks the program really keeps. The question:
is "as many more blocks as ptxas meets without a spill" faster on rows it has not seen?

Every draw (seed 7401) whose route at its sweep count is a fragment program of one row a block, unsplit,
that an SM holds (ptxas's registers, the planner's bound) in at most MOST_WARPS warps: NAME_old the
planner's program, NAME_new the same hints (threads, prefetch, block_m) under the most blocks up to
EXTRA more for which ptxas spills nothing, where one does. Into kernels/time/kernels (probe_time) and the
_new ones into kernels/check/kernels (gpu_hunt check). bounds.json: each row's registers and blocks.

    .venv/bin/python perf/probe74/build.py perf/probe74/kernels
    OUT=... ROUNDS=2 bash perf/probe51/call.sh perf/probe74/kernels     # on the device"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for sibling in ("tests", "scripts", "perf/probe50"):
    sys.path.insert(0, str(ROOT / sibling))
from build_rules import build  # noqa: E402  (an untuned build of a tree)
from test_injection import dump  # noqa: E402

sys.path.insert(0, str(ROOT / "perf" / "proto"))
from probe_scripts import probe_script  # noqa: E402  (a sibling script)

from fusegen.compile import compiled_programs_of_file  # noqa: E402
from fusegen.schedule import MAX_BLOCKS_PER_SM, SM_THREADS, WARP_THREADS, resident_blocks  # noqa: E402

PROBE72 = probe_script("probe72")
SEED, DRAWN = 7401, 48
WIDTHS = tuple(range(2048, 16385, 256))
MOST_WARPS = 24
EXTRA = 3


def fragment_route(spec: dict):
    """(route index, schedule) at the spec's sweep count where it is a fragment program of one row a block."""
    found = PROBE72.sweep_route(spec)
    if found is None or found[1].variant != "fragment" or found[1].block_m != 1 or found[1].row_split != 1:
        return None
    return found


def bounded(base: dict, schedule, blocks: int) -> dict:
    hints = dict(base.get("schedule", {}), variant="fragment", threads=schedule.threads, prefetch=schedule.prefetch, blocks_per_sm=blocks)
    return dict(base, name=f"{base['name']}_b{blocks}", schedule=hints)


def main(out: Path) -> None:
    old, trial = out / "specs_old", out / "specs_trial"
    old.mkdir(parents=True)
    trial.mkdir()
    drawn = probe_script("probe51").drawn_specs(SEED, DRAWN, lambda spec: fragment_route(spec) is not None, WIDTHS, "held74")
    # drawn_specs keeps a draw by its plan at the drawn token count, then frees the count
    chosen = [spec for spec in drawn if fragment_route(spec)]
    for base in chosen:
        (old / f"{base['name']}_old.toml").write_text(dump(dict(base, name=f"{base['name']}_old")))
    timed = out / "time" / "kernels"
    build(ROOT, old.resolve(), timed.resolve())
    records, starved = [], []
    for base in chosen:
        index, schedule = fragment_route(base)
        resources = compiled_programs_of_file(timed / f"{base['name']}_old" / "kernel.py")[index][1]
        held = max(schedule.blocks_per_sm or 1, resident_blocks(resources.registers, schedule.threads))
        most = min(MAX_BLOCKS_PER_SM, SM_THREADS // schedule.threads, held + EXTRA)
        record = {
            "spec": base["name"],
            "threads": schedule.threads,
            "values": schedule.elems_per_thread,
            "registers": resources.registers,
            "stack_bytes": resources.stack_bytes,
            "planner_blocks": schedule.blocks_per_sm,
            "held_blocks": held,
            "trials": {},
        }
        records.append(record)
        if held * schedule.threads // WARP_THREADS > MOST_WARPS or most <= held:
            shutil.rmtree(timed / f"{base['name']}_old")
            continue
        trials = {}
        for blocks in range(held + 1, most + 1):
            spec = bounded(base, schedule, blocks)
            found = fragment_route(spec)
            if found and found[1].threads == schedule.threads and found[1].blocks_per_sm == blocks:
                trials[blocks] = found[0]
                (trial / f"{spec['name']}.toml").write_text(dump(spec))
        starved.append((base, schedule, trials))
    build(ROOT, trial.resolve(), (out / "trials").resolve())
    new = out / "specs_new"
    new.mkdir()
    for base, schedule, trials in starved:
        record = next(r for r in records if r["spec"] == base["name"])
        clean = None
        for blocks, index in trials.items():
            resources = compiled_programs_of_file(out / "trials" / f"{base['name']}_b{blocks}" / "kernel.py")[index][1]
            record["trials"][blocks] = [resources.registers, resources.stack_bytes]
            if resources.stack_bytes == 0:
                clean = blocks
        record["timed_blocks"] = clean
        if clean is None:
            shutil.rmtree(timed / f"{base['name']}_old")
            continue
        spec = dict(bounded(base, schedule, clean), name=f"{base['name']}_new")
        (new / f"{spec['name']}.toml").write_text(dump(spec))
    shutil.rmtree(out / "trials")
    (out / "bounds.json").write_text(json.dumps(records, indent=1))
    probe_script("probe68").build_new(new, out)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
