"""probe129 (session 67): per-head norms padded to whole row tiles alone, with perf/probe128's rule (tiles of whole
warps may cut heads at their wrap), held out on unhinted draws.

A per-head norm padded the row to whole heads and whole row tiles at once (the lcm), so rows whose heads no tile
holds padded hard: fp16 heads of 200 in a row of 1000 ran one 2-byte column a thread padded to 1600 columns, and
under probe128's rule alone they padded to 6400. Where the heads are summed in slices (norm.head_slice) a slice
divides the tile, so the padded row needs whole tiles only; its last head may then be cut by the padding (all its
columns padding), whose statistic sums the slices it has (Extent.reduce). Where one butterfly sums a head, whole
tiles hold whole heads or whole heads whole tiles of an unpadded row, so no row pads past its last tile.

    git worktree add /tmp/oldtree fcb31d2    # the tree before both rules
    git apply perf/probe129/tiles.diff       # this tree: both
    .venv/bin/python perf/probe129/build.py /tmp/oldtree SEED COUNT

plans the first COUNT unhinted draws of the random-spec test under OLD_TREE and this tree, writes at most
MOST_DRAWS of those planned otherwise (spread evenly) to perf/probe129/specs beside the lead rows (probe128's
held-out draws and leads, never timed, and the lead_*.toml written here: rows main pads by a quarter or more), and
builds each as NAME_old (OLD_TREE) and NAME_new (this tree), untuned, in perf/probe129/kernels/time/kernels;
kernels/few/time/kernels links the same packages for the call's few-token timing."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _sibling(name: str):
    spec = importlib.util.spec_from_file_location(f"{name}_build", HERE.parent / name / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


probe114, probe128 = _sibling("probe114"), _sibling("probe128")
MOST_DRAWS = 30


def main(old_tree: Path, seed: int, count: int) -> None:
    leads = [path.relative_to(probe114.ROOT) for path in sorted((HERE.parent / "probe128/specs").glob("*.toml"))]
    probe114.unhinted_pairs(old_tree, seed, count, HERE, "tiles", MOST_DRAWS, leads)
    probe128.link_few(HERE)


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
