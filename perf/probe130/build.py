"""probe130 (session 67): perf/probe129's rules where whole heads leave a route short, held out on fresh unhinted draws.

probe129 (H100) met its bar at the sweep count (61 pairs 1.196 × in geometric mean, none under 0.987 ×) and missed it
at 256 tokens: where a route already held whole heads in 16-byte vectors, cutting them lost — the wave route's
160 threads against 480 or 192 (3840 columns over heads of 24–384, 0.914–0.979 ×), and bf16 576 rows moved to 8-byte
vectors padded to whole tiles (0.928–0.964 ×). Here tiles cut heads (at their wrap and at the padded row's end) only
where the layouts holding whole heads lay the route out short of what it needs: three 16-byte vectors a thread for
many tokens, 16-byte vectors padding the row by at most an eighth up to 256 tokens (schedule._row_schedule).

    git worktree add /tmp/oldtree fcb31d2    # the tree before the rules
    git apply perf/probe130/heads.diff       # this tree
    .venv/bin/python perf/probe130/build.py /tmp/oldtree SEED COUNT

writes at most MOST_DRAWS of the first COUNT unhinted draws this tree plans otherwise to perf/probe130/specs and
builds each as NAME_old and NAME_new, untuned, in perf/probe130/kernels/time/kernels (kernels/few linked)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "probe129"))  # ahead of this script's own folder: its build.py is imported
import build as probe129  # noqa: E402  (probe114's pairs and probe128's few-token link, as probe129 loads them)


def main(old_tree: Path, seed: int, count: int) -> None:
    probe129.probe114.unhinted_pairs(old_tree, seed, count, HERE, "heads", probe129.MOST_DRAWS)
    probe129.probe128.link_few(HERE)


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
