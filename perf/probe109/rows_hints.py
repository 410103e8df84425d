"""What perf/probe109 and probe110 build: a spec's plan, the same spec asking by its schedule hints for R rows a block on
the threads of the planner's program (rows_share_threads), and an untuned `fusegen build` of them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from test_injection import dump  # noqa: E402

from fusegen.errors import ChainError, SpecError  # noqa: E402
from fusegen.plan import plan  # noqa: E402
from fusegen.spec import parse_spec  # noqa: E402


def planned(spec: dict):
    """The spec's plan, or None where the planner refuses it (a variant past the values a thread may hold)."""
    try:
        return plan(parse_spec(dump(spec), spec["name"]), spec["name"])
    except (ChainError, SpecError):
        return None


def sharing(spec: dict, threads: int, rows: int) -> dict:
    """The spec as NAME_rR: the fragment program on `threads`, `rows` rows a block all on those threads (one row a
    block where `rows` is 1)."""
    hints = {"variant": "fragment", "threads": threads, "block_m": rows}
    if rows > 1:
        hints["rows_share_threads"] = True
    return dict(spec, name=f"{spec['name']}_r{rows}", schedule=hints)


def build(specs: Path, out: Path) -> None:
    """`fusegen build` of this tree into `out`, untuned (an empty tuning table beside it), as a user's new spec is built."""
    untuned = out.parent / "no-tuning.json"
    untuned.parent.mkdir(parents=True, exist_ok=True)
    untuned.write_text("{}\n")
    command = [sys.executable, "-m", "fusegen", "build", str(specs), "--out", str(out), "--tuning", str(untuned)]
    subprocess.run(command, check=True, cwd=ROOT)
