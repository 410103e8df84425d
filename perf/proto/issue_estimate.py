"""The issue ceiling of docs/bench/sweep/issue-floor.md estimated on the CPU: for the program each spec of a
build runs at its sweep count, the SASS instructions a thread meets on its straight path (the disassembly
up to the first EXIT: a fragment program has no loop, so each warp issues about that many per row), times
its warps per row, against ncu's executed count where a census is given (NOTES.md step 29). Lets a change
to the emitted code be weighed in instructions before a GPU run, as the amax through |x| was.

    fusegen build perf/sweep --out BUILD --tuning EMPTY.json
    NVDISASM=/path/to/nvdisasm python perf/proto/issue_estimate.py BUILD [NCU_CENSUS_CSV]

nvdisasm ships in the `nvidia-cuda-nvdisasm` wheel (pip download it; this machine's CUDA has no
disassembler). Stream programs loop over rows, so their straight path is not a row's count: listed, not
estimated."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from issue_floor import census  # noqa: E402  (sibling scripts)
from ptx_census import INCLUDES, plan_program  # noqa: E402

from fusegen.bench import sweep_tokens  # noqa: E402
from fusegen.emit import program_sources  # noqa: E402

INSTRUCTION = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")


class Compiled(NamedTuple):
    instructions: list[str]  # the kernel's SASS in order
    registers: int  # allotted a thread
    spilled_bytes: int  # a thread's spill stores: the SASS up to the first EXIT can hide the local memory


def compiled(source: str) -> Compiled:
    """The kernel as ptxas compiles it (nvcc -arch=sm_90a -O3)."""
    with tempfile.TemporaryDirectory() as scratch:
        cu = Path(scratch) / "k.cu"
        cu.write_text(source)
        cubin = cu.with_suffix(".cubin")
        ptxas = subprocess.run(
            ["nvcc", "-cubin", "-arch=sm_90a", "-O3", "-std=c++17", *INCLUDES, str(cu), "-o", str(cubin), "-Xptxas", "-v"],
            check=True,
            capture_output=True,
            text=True,
        ).stderr
        listing = subprocess.run(
            [os.environ.get("NVDISASM", "nvdisasm"), "-c", str(cubin)], check=True, capture_output=True, text=True
        ).stdout
    return Compiled(
        [m.group(1) for line in listing.splitlines() if (m := INSTRUCTION.match(line))],
        int(re.search(r"Used (\d+) registers", ptxas)[1]),
        int(re.search(r"(\d+) bytes spill stores", ptxas)[1]),
    )


def first_exit(instructions: list[str]) -> int:
    """How many of a kernel's SASS instructions come up to and including its first EXIT."""
    return next(i for i, text in enumerate(instructions) if re.sub(r"^@!?U?P\w+\s+", "", text).startswith("EXIT")) + 1


def straight_path(source: str) -> int:
    """SASS instructions of the kernel up to and including its first EXIT."""
    return first_exit(compiled(source).instructions)


def sweep_program(directory: Path) -> tuple[dict, dict, str]:
    """The plan of a built kernel, and the schedule and CUDA source of the program it runs at its sweep count."""
    plan = json.loads((directory / "plan.json").read_text())
    tokens = sweep_tokens(plan["hidden"])
    index, route = next(
        (i, r) for i, r in enumerate(plan["routes"]) if r["first_tokens"] <= tokens and (r["last_tokens"] or tokens) >= tokens
    )
    return plan, route["schedule"], program_sources((directory / "kernel.cu").read_text())[plan_program(plan, index)]


def main(build: Path, census_csv: Path | None) -> None:
    measured = {kernel: m["smsp__inst_executed.sum"] for kernel, m in census(census_csv).items()} if census_csv else {}
    print("| spec | program | straight-path SASS | warp instructions / row, estimated | ncu, executed | estimate / ncu |")
    print("|---|---|---:|---:|---:|---:|")
    for directory in sorted(p for p in build.iterdir() if (p / "plan.json").is_file()):
        plan, schedule, source = sweep_program(directory)
        name, tokens = plan["name"], sweep_tokens(plan["hidden"])
        path = straight_path(source)
        program = f"{schedule['variant']} {schedule['threads']} threads × {schedule['block_m']} row(s)"
        if schedule["variant"] != "fragment":
            print(f"| {name} | {program} | {path} | – (loops over rows) | – | – |")
            continue
        estimate = path * schedule["threads"] // 32 / schedule["block_m"]
        ncu = measured.get(name)
        shown = f"{ncu / tokens:.0f} | {estimate / (ncu / tokens):.2f}" if ncu else "– | –"
        print(f"| {name} | {program} | {path} | {estimate:.0f} | {shown} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else None)
