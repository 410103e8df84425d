"""probe55: a RoPE span the span loops cannot lay out (rope_dim below two vectors, or a span wrapping a row
tile) no longer narrows the whole row's vectors: it turns in a loop over the row tiles holding it
(rope.rope_loop "tiles"), so the row keeps 16-byte loads. Every drawn spec whose plan that changes, as NAME_old (the tree before)
and NAME_new (this tree), both untuned, into kernels/time/kernels (perf/proto/probe_time.py times them and
compares their outputs bit for bit), the _new ones also into kernels/check/kernels (scripts/gpu_hunt.py).

    git worktree add /tmp/oldwt cdac19e
    .venv/bin/python perf/probe55/build.py /tmp/oldwt perf/probe55/kernels"""

from __future__ import annotations

import importlib.util
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("probe52_build", ROOT / "perf" / "probe52" / "build.py")
probe52 = importlib.util.module_from_spec(_spec)  # its old/new pairs (a module named build, as this one is)
_spec.loader.exec_module(probe52)

from fusegen.plan import plan  # noqa: E402
from fusegen.spec import KernelSpec  # noqa: E402

SEED = 5501
DRAWN = 24
WIDTHS = (576, 1024, 1536, 2304, 2880, 3072, 3200, 4096, 5120, 7168, 8192)
# probe47's held-out rows that a short span held to 2- and 8-byte vectors (perf/probe50's table).
HELD_OUT = ("hunt_4702_008", "hunt_4702_015", "hunt_4702_019")


def span_in_tiles(spec: dict) -> bool:
    """Whether a route of the spec's plan turns the row's one span in a loop over the tiles holding it:
    the case the span loops used to refuse."""
    planned = plan(KernelSpec.model_validate(spec), spec["name"])
    return any(stage.kind == "rope" and stage.params["loop"] == "tiles" for route in planned.routes for stage in route.stages)


def main(old_tree: Path, out: Path) -> None:
    variants = ROOT / "perf" / "probe50" / "kernels" / "variants" / "specs"
    held_out = [tomllib.loads((variants / f"{name}.toml").read_text()) for name in HELD_OUT]
    drawn = probe52.drawn_specs(SEED, DRAWN, span_in_tiles, WIDTHS, "span")  # probe51's draws, through probe52
    probe52.build_changed(old_tree, out, held_out + drawn)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
