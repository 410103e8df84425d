"""The issue ratio of a generated kernel's program of many tokens: the time an SM takes to issue one row's
instructions (PTX instructions of the program, straight-line as the generator unrolls them, × its warps a row,
at four warp-instructions a clock) over the time the copy ceiling moves the row's ledger bytes on one SM.
A static count of PTX, not SASS (no cuobjdump on the CPU machines): a signal to sort rows by, not a model.

    python perf/proto/issue_ratio.py KERNEL_DIR [KERNEL_DIR ...]"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import tilelang

TILELANG = Path(tilelang.__file__).parent
NVCC = "nvcc"
CLOCK_HZ = 1.98e9  # H200 boost
SMS = 132
COPY_BYTES_PER_S = 4.23e12  # torch's copy on the H200 (BENCHMARKS.md)
ISSUE_PER_CLOCK = 4  # warp-instructions an SM issues a clock, one per scheduler


def last_program(source: str, name: str) -> str:
    """The CUDA file with only its last program (a kernel of two routes defines its function twice)."""
    declaration = f'extern "C" __global__ void {name}('
    starts = [m.start() for m in re.finditer(re.escape(declaration), source)]
    declared = [i for i in starts if source[i : source.index("\n", i)].rstrip().endswith(";")]
    return source[: starts[0]] + source[declared[-1] :]


def ptx_instructions(kernel_cu: Path, name: str) -> int:
    with tempfile.TemporaryDirectory() as scratch:
        cu, ptx = Path(scratch) / "k.cu", Path(scratch) / "k.ptx"
        cu.write_text(last_program(kernel_cu.read_text(), name))
        includes = [f"-I{TILELANG / 'src'}", f"-I{TILELANG / '3rdparty' / 'cutlass' / 'include'}"]
        subprocess.run(
            [NVCC, "-ptx", "-arch=sm_90a", "-std=c++17", "-O3", "-DENABLE_BF16", *includes, str(cu), "-o", str(ptx)],
            check=True,
            capture_output=True,
        )
        lines = ptx.read_text().splitlines()
    entry = max(i for i, line in enumerate(lines) if ".entry" in line)
    return sum(1 for line in lines[entry:] if line.strip().endswith(";") and not line.strip().startswith((".", "//", "$", "{", "}")))


def issue_ratio(kernel_dir: Path) -> tuple[float, int]:
    p = json.loads((kernel_dir / "plan.json").read_text())
    s = p["routes"][-1]["schedule"]
    instructions = ptx_instructions(kernel_dir / "kernel.cu", f"{p['name']}_kernel")
    issue_s = instructions * (s["threads"] // 32) / ISSUE_PER_CLOCK / CLOCK_HZ
    row_bytes = sum(entry["bytes_per_token"] for entry in p["ledger"]["fused"])
    return issue_s / (row_bytes / (COPY_BYTES_PER_S / SMS)), instructions


if __name__ == "__main__":
    for directory in map(Path, sys.argv[1:]):
        ratio, instructions = issue_ratio(directory)
        print(f"{directory.name:40} {ratio:5.2f} ({instructions} PTX instructions)")
