"""probe125 (session 64): up to 256 tokens, a plain row the many-token schedule holds on four warps or more at 24
values a thread or more takes twice the threads (schedule.wave_wide_threads in rule.diff: missed its bar, not on
main), held out on unhinted draws of the random-spec test beside the sweep specs it moves (the rule was read off
perf/probe117's pairs of those).

    git worktree add /tmp/oldtree 05cd1f6    # the tree before the rule
    git apply perf/probe125/rule.diff        # this tree: the rule
    .venv/bin/python perf/probe125/build.py /tmp/oldtree SEED COUNT

plans the sweep's specs and the first COUNT draws (hints and token counts dropped) under OLD_TREE and this tree,
writes the moved sweep specs and at most MOST_DRAWS moved draws (spread evenly) to perf/probe125/specs_few, and
builds each as NAME_old (OLD_TREE) and NAME_new (this tree) in perf/probe125/kernels/few (git-ignored; timed at few
tokens by perf/probe114/call.sh with PROBE=probe125)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("probe114_build", HERE.parent / "probe114/build.py")
probe114 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(probe114)

MOST_DRAWS = 24


def main(old_tree: Path, seed: int, count: int) -> None:
    probe114.few_pairs(old_tree, probe114.ROOT, seed, count, HERE, "wide", MOST_DRAWS)


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
