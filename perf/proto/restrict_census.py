"""What __restrict__ on the per-column side inputs (weight, bias, rescale weight) does to each kernel of a
build, on the CPU: for the program each runs at its sweep count, compiled with those parameters restrict
and without, the registers ptxas allots, the blocks per SM they leave, and the global loads on the
straight path before and after the first barrier (schedule.with_pinned_side_inputs, perf/probe15/).

    fusegen build SPECS --out BUILD --tuning EMPTY.json
    NVDISASM=/path/to/nvdisasm python perf/proto/restrict_census.py BUILD > census.jsonl

One JSON line per kernel; kernels without per-column side inputs have no `pinned` entry."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from fusegen.schedule import SM_REGISTERS, SM_THREADS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from issue_estimate import compiled, sweep_program  # noqa: E402  (sibling script)

PER_COLUMN = ("Weight", "Bias", "ScaleWeight")
SM_BLOCKS = 32  # resident blocks an sm_90 SM holds (the planner stops at 16: schedule.MAX_BLOCKS_PER_SM)


def census(source: str, threads: int) -> dict:
    """Registers, spilled bytes, blocks per SM and load placement of `source`."""
    instructions, registers, spilled_bytes = compiled(source)
    per_warp = -(-registers * 32 // 256) * 256  # allotted per warp in units of 256
    blocks = min(SM_REGISTERS // (per_warp * (threads // 32)), SM_THREADS // threads, SM_BLOCKS)
    return {"registers": registers, "spilled_bytes": spilled_bytes, "blocks_per_sm": blocks, **loads_around_first_barrier(instructions)}


def loads_around_first_barrier(instructions: list[str]) -> dict:
    """Global loads before and after the first BAR.SYNC, up to the first unpredicated EXIT."""
    before = after = 0
    barrier = False
    for instruction in instructions:
        barrier |= "BAR.SYNC" in instruction
        if "LDG" in instruction:
            after += barrier
            before += not barrier
        if re.search(r"\bEXIT\b", instruction) and not instruction.startswith("@"):
            break
    return {"loads_before_barrier": before, "loads_after": after}


def main(build: Path) -> None:
    for kernel in sorted(p for p in build.iterdir() if (p / "plan.json").is_file()):
        plan, schedule, source = sweep_program(kernel)
        params = [p for p in PER_COLUMN if re.search(rf"\* (?:__restrict__ )?{p}\b", source)]
        restricted = source
        for p in params:
            restricted = re.sub(rf"(\S+\*) {p}\b", rf"\1 __restrict__ {p}", restricted)
        row = {"kernel": plan["name"], "params": params, "restrict": census(restricted, schedule["threads"])}
        if params:
            unrestricted = re.sub(rf"(\S+\*) __restrict__ ({'|'.join(params)})\b", r"\1 \2", restricted)
            row["pinned"] = census(unrestricted, schedule["threads"])
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
