"""probe128 (session 66): per-head norms on tiles that cut heads at their wrap, held out on unhinted draws.

`schedule._row_schedule` offers a thread count that is not a power of two only where its row tile holds whole
multiples of every op's columns — a per-head norm's heads among them — so heads of 288 columns and up that no
whole-warp tile holds fall to powers of two, often on 2- or 4-byte vectors (of a grid of 1444 per-head chains,
bf16 and fp32, heads 64–2016, 416 plan otherwise, 238 of them from narrower vectors to 16 bytes), and
perf/probe127's fp16 LayerNorm over heads of 1152 → RoPE → FP8 g8 2304 runs 288 threads × one vector (0.814 × copy,
H100). rule.diff lets a tile cut heads at its wrap (their statistic is summed in power-of-two slices of lanes that
divide the threads, norm.head_slice, which never cut it); quantisation groups still may not.

    git worktree add /tmp/oldtree 513d9d9    # the tree before the rule
    git apply perf/probe128/rule.diff        # this tree: the rule
    .venv/bin/python perf/probe128/build.py /tmp/oldtree SEED COUNT

plans the first COUNT unhinted draws of the random-spec test under OLD_TREE and this tree, writes at most
MOST_DRAWS of those planned otherwise (spread evenly) to perf/probe128/specs beside the lead rows (probe127's row,
and the grid rows of wide heads specs/ holds as lead_*.toml), and builds each as NAME_old (OLD_TREE) and NAME_new
(this tree), untuned, in perf/probe128/kernels/time/kernels; kernels/few/time/kernels links the same packages,
for the call's few-token timing (the rule moves routes of every count)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("probe114_build", HERE.parent / "probe114/build.py")
probe114 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(probe114)

MOST_DRAWS = 30
# The lead rows the rule was read off: probe127's row, copied in, and four grid rows of wide heads, written in specs/
# as lead_*.toml (the build takes every spec there).
LEADS = ("perf/probe127/draw/specs/hunt_6501_027.toml",)


def link_few(here: Path) -> None:
    """probe114's call times kernels/few/time/kernels at few tokens: here, the same packages, linked."""
    few = here / "kernels/few/time"
    shutil.rmtree(few, ignore_errors=True)
    few.mkdir(parents=True)
    (few / "kernels").symlink_to("../../time/kernels", target_is_directory=True)


def main(old_tree: Path, seed: int, count: int) -> None:
    probe114.unhinted_pairs(old_tree, seed, count, HERE, "heads", MOST_DRAWS, LEADS)
    link_few(HERE)


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
