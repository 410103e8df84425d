"""Row bytes an SM holds in flight, per kernel of a build, on the CPU: for the program each runs at its
sweep count, the registers ptxas allots (nvcc for sm_90a) and the bytes it spills a thread, the blocks an
SM holds (registers, threads, and a stream program's own grid), and the row bytes those blocks hold — one
row each for a fragment program, every ring slot for a stream one (perf/probe16/README.md).

    fusegen build SPECS --out BUILD --tuning EMPTY.json
    NVDISASM=/path/to/nvdisasm python perf/proto/in_flight.py BUILD > in-flight.jsonl

One JSON line per kernel. A row split over several blocks is counted as whole rows."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fusegen.model import DTYPE_BYTES

sys.path.insert(0, str(Path(__file__).resolve().parent))
from issue_estimate import sweep_program  # noqa: E402  (sibling script)
from restrict_census import census  # noqa: E402


def main(build: Path) -> None:
    for kernel in sorted(p for p in build.iterdir() if (p / "plan.json").is_file()):
        plan, schedule, source = sweep_program(kernel)
        counted = census(source, schedule["threads"])
        row_bytes = plan["hidden"] * DTYPE_BYTES[plan["dtype"]]
        blocks = counted["blocks_per_sm"]
        rows = 1
        if schedule["variant"] == "stream":
            blocks, rows = min(blocks, schedule["blocks_per_sm"]), schedule["ring_slots"]
        row = {
            "kernel": kernel.name,
            "variant": schedule["variant"],
            "threads": schedule["threads"],
            "registers": counted["registers"],
            "spilled_bytes": counted["spilled_bytes"],
            "blocks": blocks,
            "ring": schedule.get("ring_slots"),
            "kb_in_flight": round(blocks * rows * row_bytes / 1024, 1),
        }
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
