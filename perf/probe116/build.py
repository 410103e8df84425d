"""probe116 (session 57): short rows that write column-major scales in groups of 8–16 take sector_rows' eight rows a
block too. short_rows gives a row under 2 KB two or four rows a block, each on threads of its own, and sector_rows
then left it alone (it took only one-row programs), so each group's scales left in runs of 8–16 bytes: probe113's
fp16 add → LayerNorm → FP8 g8 1000 (column-major scales, Y, mean and rstd) ran 0.704 × copy on an H100 at two rows
a block. Held out on unhinted draws of the random-spec test (hints and token counts dropped, as a user's new spec).

    git worktree add /tmp/oldtree a7062f9
    .venv/bin/python perf/probe116/build.py /tmp/oldtree SEED COUNT

plans the first COUNT draws under OLD_TREE and this tree, writes those whose routes differ (at most 40, spread
evenly, beside probe113's hunt_5501_031) to perf/probe116/specs, and builds each as NAME_old and NAME_new in
perf/probe116/kernels (probe114's unhinted_pairs)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("probe114_build", HERE.parent / "probe114/build.py")
probe114 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(probe114)

if __name__ == "__main__":
    probe114.unhinted_pairs(
        Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), HERE, "short", also=("perf/probe113/draw/specs/hunt_5501_031.toml",)
    )
