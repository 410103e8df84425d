"""What __restrict__ on the per-column side inputs (weight, bias, rescale weight) does to each kernel of a
build, on the CPU: for the program that serves the most tokens, compiled with those parameters restrict
and without, the registers ptxas allots, the blocks per SM they leave, and the global loads on the
straight path before and after the first barrier (schedule.with_pinned_side_inputs, perf/probe15/).

    fusegen build SPECS --out BUILD --tuning EMPTY.json
    NVDISASM=/path/to/nvdisasm python perf/proto/restrict_census.py BUILD > census.jsonl

One JSON line per kernel; kernels without per-column side inputs have no `pinned` entry."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ptx_census import INCLUDES  # noqa: E402  (sibling script)

PER_COLUMN = ("Weight", "Bias", "ScaleWeight")
INSTRUCTION = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")
SM_REGISTERS, SM_THREADS, SM_BLOCKS = 65536, 2048, 32


def compiled(source: str) -> dict:
    """Registers, blocks per SM and load placement of `source` (nvcc -arch=sm_90a -O3)."""
    with tempfile.TemporaryDirectory() as scratch:
        cu = Path(scratch) / "k.cu"
        cu.write_text(source)
        cubin = cu.with_suffix(".cubin")
        nvcc = ["nvcc", "-cubin", "-arch=sm_90a", "-O3", "-std=c++17", *INCLUDES, str(cu), "-o", str(cubin), "-Xptxas", "-v"]
        registers = int(re.search(r"Used (\d+) registers", subprocess.run(nvcc, capture_output=True, text=True, check=True).stderr)[1])
        sass = subprocess.run([os.environ.get("NVDISASM", "nvdisasm"), "-c", str(cubin)], capture_output=True, text=True, check=True).stdout
    threads = int(re.search(r"__launch_bounds__\((\d+)", source)[1])
    per_warp = -(-registers * 32 // 256) * 256  # allotted per warp in units of 256
    blocks = min(SM_REGISTERS // (per_warp * (threads // 32)), SM_THREADS // threads, SM_BLOCKS)
    return {"registers": registers, "blocks_per_sm": blocks, **loads_around_first_barrier(sass)}


def loads_around_first_barrier(sass: str) -> dict:
    """Global loads before and after the first BAR.SYNC, up to the first unpredicated EXIT."""
    before = after = 0
    barrier = False
    for line in sass.splitlines():
        if not (match := INSTRUCTION.match(line)):
            continue
        instruction = match[1]
        barrier |= "BAR.SYNC" in instruction
        if "LDG" in instruction:
            after += barrier
            before += not barrier
        if re.search(r"\bEXIT\b", instruction) and not instruction.startswith("@"):
            break
    return {"loads_before_barrier": before, "loads_after": after}


def main(build: Path) -> None:
    for kernel in sorted(build.glob("*/kernel.cu")):
        # The last program serves the most tokens: the sweep's counts.
        source = re.split(r"^// ==== program_\d+.*$", kernel.read_text(), flags=re.M)[-1]
        params = [p for p in PER_COLUMN if re.search(rf"\* (?:__restrict__ )?{p}\b", source)]
        restricted = source
        for p in params:
            restricted = re.sub(rf"(\S+\*) {p}\b", rf"\1 __restrict__ {p}", restricted)
        row = {"kernel": kernel.parent.name, "params": params, "restrict": compiled(restricted)}
        if params:
            row["pinned"] = compiled(re.sub(rf"(\S+\*) __restrict__ ({'|'.join(params)})\b", r"\1 \2", restricted))
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
