"""probe117 (session 57): up to 256 tokens, a row the many-token schedule holds on four warps or more at 24 values a
thread or more takes twice the threads (schedule.WAVE_WIDE_VALUES on branch probe117-wave-wide). Every sweep spec the
change moves, and unhinted draws of the random-spec test (hints and token counts dropped) held out beside them.

    git worktree add /tmp/oldtree a7062f9
    git worktree add /tmp/newtree 70ef2f5
    .venv/bin/python perf/probe117/build.py /tmp/oldtree /tmp/newtree SEED COUNT

plans the sweep's specs and the first COUNT draws under OLD_TREE and NEW_TREE, writes the moved sweep specs and at
most 16 moved draws (spread evenly) to perf/probe117/specs_few, and builds each as NAME_old (OLD_TREE) and NAME_new
(NEW_TREE) in perf/probe117/kernels/few (probe114's draw and pair helpers; timed at few tokens by probe114's call)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("probe114_build", HERE.parent / "probe114/build.py")
probe114 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(probe114)

MOST_DRAWS = 16


def main(old_tree: Path, new_tree: Path, seed: int, count: int) -> None:
    probe114.few_pairs(old_tree, new_tree, seed, count, HERE, "wave", MOST_DRAWS)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
