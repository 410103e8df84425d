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
import random
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("probe114_build", HERE.parent / "probe114/build.py")
probe114 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(probe114)

MOST_DRAWS = 24


def main(old_tree: Path, seed: int, count: int) -> None:
    directory = HERE / "specs_few"
    sweep = [tomllib.loads(p.read_text()) for p in sorted((probe114.ROOT / "perf/sweep").glob("*.toml"))]
    sweep_moved = probe114.moved(old_tree, sweep)
    print(f"sweep: {len(sweep_moved)} of {len(sweep)} specs planned otherwise")
    rng = random.Random(seed)
    drawn = [{k: v for k, v in probe114.draws.draw_valid(rng).items() if k not in ("schedule", "tokens")} for _ in range(count)]
    drawn_moved = probe114.moved(old_tree, drawn)
    print(f"seed {seed}: {len(drawn_moved)} of {count} draws planned otherwise")
    probe114.write(drawn, drawn_moved, MOST_DRAWS, directory, f"wide_{seed}")
    for i in sweep_moved:
        (directory / f"{sweep[i]['name']}.toml").write_text(probe114.dump(sweep[i]))
    specs = [tomllib.loads(p.read_text()) for p in sorted(directory.glob("*.toml"))]
    probe114.build_pairs(specs, old_tree, probe114.ROOT, HERE / "kernels/few")


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
