"""perf/probe38 on the CPU: for each spec, the SASS of the program it runs at its sweep count as TileLang
writes it and with bf16 pairs widened from their words (bf16_words.with_words) — instructions up to the
first EXIT (a fragment program's work on its row) and the registers ptxas allots.

    NVDISASM=/path/to/nvdisasm python perf/probe38/sass.py perf/probe38/kernels > perf/probe38/results/sass.md
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "proto"))
from bf16_words import with_words  # noqa: E402
from issue_estimate import compiled, straight_path, sweep_program  # noqa: E402


def main(build: Path) -> None:
    print("| spec | program | SASS to the first EXIT | with words | change | registers | with words |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for directory in sorted(build.glob("*_old")):
        _, schedule, source = sweep_program(directory)
        widened = with_words(source)
        before, after = straight_path(source), straight_path(widened)
        registers, registers_widened = compiled(source).registers, compiled(widened).registers
        program = f"{schedule['variant']} {schedule['threads']}"
        name = directory.name.removesuffix("_old")
        print(
            f"| {name} | {program} | {before} | {after} | {100 * (after / before - 1):+.1f} % | {registers} | {registers_widened} |",
            flush=True,
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
