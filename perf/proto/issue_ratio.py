"""The issue ratio of built kernels, one number a kernel to sort rows by: the inverse of ptx_census.py's issue
ceiling (NOTES.md step 22) counted in PTX — the PTX instructions of the program a kernel runs at its sweep
count, straight-line as the generator unrolls a fragment program, × its warps a row, over what the H200's
schedulers issue while the copy ceiling moves the row's ledger bytes. Above 1 a row's instructions take longer
to issue than its bytes take to move. Static PTX, not what executes (NOTES.md steps 24 and 29): a filter, not
a model. perf/probe97 held it out.

    python perf/proto/issue_ratio.py KERNEL_DIR [KERNEL_DIR ...]"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from issue_estimate import sweep_program  # noqa: E402  (sibling scripts)
from ptx_census import ISSUE_PER_SECOND, compiled  # noqa: E402

COPY_BYTES_PER_S = 4.23e12  # torch's copy on the H200 (BENCHMARKS.md)


def issue_ratio(kernel_dir: Path) -> tuple[float, int]:
    """(the ratio, the program's PTX instructions) of a `fusegen build` kernel directory."""
    plan, schedule, source = sweep_program(kernel_dir)
    ptx_instructions = compiled(source)[0]
    warp_instructions = ptx_instructions * (schedule["threads"] // 32) / schedule["block_m"]
    row_bytes = sum(entry["bytes_per_token"] for entry in plan["ledger"]["fused"])
    return warp_instructions / ISSUE_PER_SECOND / (row_bytes / COPY_BYTES_PER_S), ptx_instructions


if __name__ == "__main__":
    for directory in map(Path, sys.argv[1:]):
        ratio, instructions = issue_ratio(directory)
        print(f"{directory.name:40} {ratio:5.2f} ({instructions} PTX instructions)")
