"""probe120 (session 60): short rows quantised to FP8, from one warp's 16-byte vectors up to 2 KB, share warps as
512-byte ones do (schedule.one_vector_row_sharing, widened from ONE_VECTOR_ROW_BYTES alone to everything below
SHORT_ROWS_BLOCK_BYTES). Held out on unhinted draws of the random-spec test (hints and token counts dropped, as a
user's new spec).

    git worktree add /tmp/oldtree 1bc50dd
    .venv/bin/python perf/probe120/build.py /tmp/oldtree SEED COUNT      # in a tree with rule.patch applied (README)

plans the first COUNT draws under OLD_TREE and this tree, writes those whose routes differ (at most 40, spread
evenly) to perf/probe120/specs, and builds each as NAME_old and NAME_new in perf/probe120/kernels (probe114's
unhinted_pairs)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("probe114_build", HERE.parent / "probe114/build.py")
probe114 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(probe114)

if __name__ == "__main__":
    probe114.unhinted_pairs(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), HERE, "share")
