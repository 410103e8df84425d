"""probe99 (session 42): the planner's route for up to schedule.WAVE_TOKENS tokens on four warps a row or more
(schedule.wave_threads), held out: every spec it changes among the sweep's, probe98's and a fresh draw's, as
NAME_old (the tree before it) and NAME_new, timed at 8, 128 and 256 tokens in interleaved rounds, the new
builds checked against their references at every route's counts.

`select OUT SPEC_DIR...` copies into OUT each unpinned spec of the directories that wave_threads takes (at most
MOST_DRAWN from a draw directory); `build OLD_TREE OUT` is perf/probe96/build.py's, on OUT's specs.

    .venv/bin/python scripts/gpu_hunt.py draw 400 /tmp/p99/draw --seed 4299 --hinted 0 --specs-only
    .venv/bin/python perf/probe99/build.py select perf/probe99/specs perf/sweep perf/probe98/specs /tmp/p99/draw/specs
    git worktree add /tmp/oldtree 27afac7
    .venv/bin/python perf/probe99/build.py build /tmp/oldtree perf/probe99/kernels
    (device) OUT=... bash perf/probe99/call.sh"""

from __future__ import annotations

import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "perf" / "probe96"))
from build import build_both  # noqa: E402  (probe96's old/new build)

from fusegen.errors import ChainError, SpecError  # noqa: E402
from fusegen.schedule import wave_threads  # noqa: E402
from fusegen.spec import parse_spec  # noqa: E402

SPECS = Path(__file__).resolve().parent / "specs"
MOST_DRAWN = 24


def select(out: Path, *directories: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for directory in directories:
        drawn, taken = "draw" in str(directory), 0
        for path in sorted(directory.glob("*.toml")):
            text = path.read_text()
            if tomllib.loads(text).get("tokens") or path.stem.endswith(("_t2", "_t4")):
                continue
            try:
                takes = wave_threads(parse_spec(text, path.name))
            except (ChainError, SpecError):
                continue
            if takes and not (drawn and taken == MOST_DRAWN):
                shutil.copy(path, out / path.name)
                taken += 1
    print(f"{len(list(out.glob('*.toml')))} specs in {out}")


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "select":
        select(*map(Path, args))
    elif command == "build":
        build_both(Path(args[0]), Path(args[1]), SPECS)
    else:
        sys.exit(__doc__)
