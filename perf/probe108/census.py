"""probe108's CPU census: each NAME_old / NAME_new pair's program at its sweep count as ptxas compiles it — registers,
spill stores, SASS instructions (the slow path's out-of-line code included), those a thread meets on its straight path
to its first EXIT (a fragment program's row; a stream's path ends inside its loop: not shown), BSSY reconvergence
regions and calls.

    NVDISASM=/path/to/nvdisasm .venv/bin/python perf/probe108/census.py [KERNELS]   # default perf/probe108/kernels/time/kernels

One line a pair, as results/cpu-census.txt holds them; a register count that crosses an occupancy step is what the
README's bar holds apart."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "proto"))
from issue_estimate import compiled, first_exit, sweep_program  # noqa: E402  (sibling scripts)


def opcodes(instructions: list[str], opcode: str) -> int:
    """How many instructions, predicated or not, are `opcode`."""
    return sum(text.split()[1 if text.startswith("@") else 0].split(".")[0] == opcode for text in instructions)


def main(kernels: Path) -> None:
    for old in sorted(kernels.glob("*_old")):
        new = old.with_name(old.name[: -len("_old")] + "_new")
        (_, schedule, old_source), (_, _, new_source) = sweep_program(old), sweep_program(new)
        before, after = compiled(old_source), compiled(new_source)
        columns = [
            f"{old.name[: -len('_old')]:<40} {schedule['variant']:<9} {schedule['threads']:>4}",
            f"regs {before.registers:>3}->{after.registers:>3}",
            f"spill {before.spilled_bytes}->{after.spilled_bytes}",
            f"SASS {len(before.instructions):>5}->{len(after.instructions):>5}",
            f"path {first_exit(before.instructions):>4}->{first_exit(after.instructions):>4}"
            if schedule["variant"] == "fragment"
            else f"path {'-':>10}",
            *(f"{op} {opcodes(before.instructions, op):>3}->{opcodes(after.instructions, op):>3}" for op in ("BSSY", "CALL")),
        ]
        print("  ".join(columns), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "kernels" / "time" / "kernels")
