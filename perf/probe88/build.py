"""probe88 (built in session 39 on the prototype commit of Schedule.row_loop, for a later device session): the
stream variant taking 8 consecutive rows a block (the `row_loop` hint), the next row's x in flight through
its ring, the rows' column-major scales staged and stored as whole 32-byte sectors after the last — on
perf/probe84's 14 sector rows (column-major scales in groups of 8–16, rows of 2048–10240 columns), against
the planner's blocks of several rows (NAME_p, schedule.sector_rows) and the same stream without the row loop
(NAME_stream: rows a grid apart, each scale stored alone). Each `_loop` and `_stream` build takes the most
blocks an SM of the planner's stream sizing that ptxas compiles without a spill (the staging adds registers).
Into kernels/time/kernels; the `_loop` builds also into kernels/check/kernels.

    git worktree add /tmp/rowloop PROTOTYPE      # the commit that adds Schedule.row_loop (see README.md)
    cd /tmp/rowloop && .venv/bin/python perf/probe88/build.py /work/main/perf/probe84/kernels/pair/specs perf/probe88/kernels
    OUT=... ROUNDS=2 bash perf/probe51/call.sh perf/probe88/kernels      # on the device"""

from __future__ import annotations

import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "perf" / "probe50"))
from build_rules import build  # noqa: E402  (probe50's untuned build in a given tree)
from test_injection import dump  # noqa: E402

from fusegen.compile import compiled_programs_of_file  # noqa: E402
from fusegen.errors import ChainError, SpecError  # noqa: E402
from fusegen.plan import plan  # noqa: E402
from fusegen.spec import parse_spec  # noqa: E402

SECTOR_ROWS = [f"sector84_8402_{k:02d}_p" for k in range(14)]
ROW_LOOP = 8


def stream_blocks(spec: dict) -> int | None:
    """The blocks an SM the planner's stream sizing gives `spec` streamed; None where it cannot stream."""
    streamed = dict(spec, schedule={"variant": "stream"})
    try:
        return plan(parse_spec(dump(streamed), spec["name"]), spec["name"]).routes[-1].schedule.blocks_per_sm
    except (ChainError, SpecError):
        return None


def unspilled(spec: dict, hints: dict, most_blocks: int, scratch: Path) -> dict | None:
    """`spec` under `hints` at the most blocks an SM, from `most_blocks` down, that ptxas compiles without a
    spill (every program of the kernel); None where none does or the planner refuses the hints."""
    for blocks in range(most_blocks, 0, -1):
        trial = dict(spec, schedule=dict(hints, blocks_per_sm=blocks))
        try:
            plan(parse_spec(dump(trial), trial["name"]), trial["name"])
        except (ChainError, SpecError):
            continue
        specs = scratch / f"{trial['name']}_{blocks}" / "specs"
        specs.mkdir(parents=True)
        (specs / f"{trial['name']}.toml").write_text(dump(trial))
        build(ROOT, specs.resolve(), (specs.parent / "kernels").resolve())
        programs = compiled_programs_of_file(specs.parent / "kernels" / trial["name"] / "kernel.py")
        if all(r is not None and r.stack_bytes == 0 for _, r in programs):
            return trial
    return None


def main(source: Path, out: Path) -> None:
    specs = out / "specs"
    specs.mkdir(parents=True)
    scratch = out / "trials"
    for name in SECTOR_ROWS:
        base = dict(tomllib.loads((source / f"{name}.toml").read_text()))
        stem = name.removesuffix("_p")
        (specs / f"{stem}_p.toml").write_text(dump(dict(base, name=f"{stem}_p")))
        most = stream_blocks(base)
        if most is None:
            print(f"{stem}: no stream", flush=True)
            continue
        for suffix, hints in (("loop", {"variant": "stream", "row_loop": ROW_LOOP}), ("stream", {"variant": "stream"})):
            found = unspilled(dict(base, name=f"{stem}_{suffix}"), hints, most, scratch)
            if found is None:
                print(f"{stem}_{suffix}: spilled at every bound", flush=True)
                continue
            (specs / f"{found['name']}.toml").write_text(dump(found))
    shutil.rmtree(scratch, ignore_errors=True)
    build(ROOT, specs.resolve(), (out / "time" / "kernels").resolve())
    checked = out / "check" / "kernels"
    checked.mkdir(parents=True)
    for package in sorted((out / "time" / "kernels").glob("*_loop")):
        shutil.copytree(package, checked / package.name)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
