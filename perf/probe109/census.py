"""probe109's CPU census: each variant's program as ptxas compiles it — registers, spills, the SASS instructions of a
thread's straight path (to its first EXIT) for all its block's rows and per row, the blocks an SM its registers
allow, and where its loads before the first barrier sit on that path (a wide span: loads issued one after another,
each waiting on the last — what the first call's R-row programs did, session 53). The planner's program (NAME) beside
each NAME_rR, at the sweep count.

    NVDISASM=/path/to/nvdisasm .venv/bin/python perf/probe109/census.py [KERNELS]   # default kernels/time/kernels
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "proto"))
from issue_estimate import compiled, first_exit, sweep_program  # noqa: E402  (sibling scripts)

from fusegen.compile import cuda_sources_of_file  # noqa: E402
from fusegen.schedule import resident_blocks  # noqa: E402


def early_loads(instructions: list[str]) -> str:
    """Where the global loads before the straight path's first barrier sit on it (the row's, and side inputs loaded
    beside it): their instructions' positions."""
    path = instructions[: first_exit(instructions)]
    barrier = next((i for i, text in enumerate(path) if "BAR.SYNC" in text), len(path))
    return "loads at " + ",".join(str(i) for i, text in enumerate(path[:barrier]) if "LDG" in text)


def main(kernels: Path) -> None:
    for planner in sorted(p for p in kernels.iterdir() if (p / "plan.json").is_file() and not re.search(r"_r\d$", p.name)):
        _, schedule, source = sweep_program(planner)
        base = compiled(source)
        # A stream's straight path ends inside its loop over rows: not a row's count.
        per_row = f"{first_exit(base.instructions):>4} a row" if schedule["variant"] == "fragment" else "(loops over rows)"
        print(
            f"{planner.name:46} planner {schedule['variant']:8} {schedule['threads']:>3} threads  regs {base.registers:>3}"
            f"  spill {base.spilled_bytes:>3}  SASS {per_row}  {early_loads(base.instructions)}"
        )
        for variant in sorted(kernels.glob(f"{planner.name}_r*")):
            rows = int(variant.name.rsplit("_r", 1)[1])
            (source,) = cuda_sources_of_file(variant / "kernel.py")
            threads = int(re.search(r"__launch_bounds__\((\d+)", source)[1])
            program = compiled(source)
            path = first_exit(program.instructions)
            print(
                f"{'':46} rows {rows}   fragment {threads:>3} threads  regs {program.registers:>3}  spill {program.spilled_bytes:>3}"
                f"  SASS {path / rows:6.1f} a row ({path} a block)  {resident_blocks(program.registers, threads):>2} blocks an SM"
                f"  {early_loads(program.instructions)}",
                flush=True,
            )


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "kernels" / "time" / "kernels")
