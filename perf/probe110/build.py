"""probe110 (session 51, built, not run): rows that share their threads (the schedule hint rows_share_threads), held
out on fresh unhinted draws.

perf/probe109 asks the question on the sweep's issue-bound rows, which it was built for; a planner rule fitted to its
answer needs rows it was not fitted to. These are fresh draws of every chain (random_hunt's, unhinted, half at model
widths) whose planner program at the sweep count is a fragment program of one row a block — the programs the hint
would replace — chosen by their issue ratio (main), each built untuned as NAME, and as NAME_rR with the hints variant "fragment", the planner's threads
at that count, block_m = R and rows_share_threads = true, for R = 2 and 4 where the planner takes them (a thread holds
at most schedule.SHARED_ROWS_ELEMS_PER_THREAD values).

    .venv/bin/python perf/probe110/build.py SEED DRAWN HIGH LOW   # specs/ and kernels/time/kernels (CPU, ~15 min)

On the device `PROBE=probe110 OUT=... bash perf/probe109/call.sh`; the CPU census is perf/probe109/census.py over
kernels/time/kernels."""

from __future__ import annotations

import random
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
for sibling in ("tests", "scripts", "perf/proto", "perf/probe109"):
    sys.path.insert(0, str(ROOT / sibling))
import random_hunt  # noqa: E402  (the CPU hunt's draws)
from issue_ratio import issue_ratio  # noqa: E402  (the static signal of an issue-bound program)
from rows_hints import build, planned, sharing  # noqa: E402  (probe109's)
from test_injection import dump  # noqa: E402

from fusegen.bench import sweep_tokens  # noqa: E402

ROWS = (2, 4)
# perf/probe97 (seed 4201's 129 fragment programs): median 0.837 × copy at an issue ratio of 0.60 or more, 0.974 under 0.45.
HIGH_ISSUE_RATIO = 0.6
LOW_ISSUE_RATIO = 0.45


def one_row_threads(spec: dict) -> int | None:
    """The threads of the spec's program at its sweep count where that is a fragment program of one whole row a block."""
    schedule = planned(spec).route_for(sweep_tokens(spec["hidden"])).schedule
    one_row = schedule.variant == "fragment" and schedule.block_m == 1 and schedule.row_split == 1
    return schedule.threads if one_row else None


def main(seed: int, drawn_count: int, high: int, low: int) -> None:
    """Draws `drawn_count` specs whose sweep-count program is a one-row fragment program, builds them, and keeps the
    first `high` whose issue ratio (perf/proto/issue_ratio.py) is at least HIGH_ISSUE_RATIO — the rows issue-bound
    by that static signal, where probe109 expects rows sharing threads to win — and the first `low` under
    LOW_ISSUE_RATIO, where it expects them to lose; those get their R-row variants."""
    specs, drawn_dir = HERE / "specs", HERE / "kernels" / "drawn"
    shutil.rmtree(specs, ignore_errors=True)
    shutil.rmtree(HERE / "kernels", ignore_errors=True)
    specs.mkdir()
    drawn_dir.mkdir(parents=True)
    candidates = {}
    for drawn, _ in random_hunt.planned_draws(random.Random(seed), 0.0, random_hunt.MODEL_WIDTHS):
        if "tokens" in drawn:  # a pinned count is timed only there, not at the sweep count
            continue
        spec = dict(drawn, name=f"s110_{seed}_{len(candidates):02d}")
        threads = one_row_threads(spec)
        if threads is not None:
            candidates[spec["name"]] = (spec, threads)
            (drawn_dir / f"{spec['name']}.toml").write_text(dump(spec))
        if len(candidates) == drawn_count:
            break
    built = HERE / "kernels" / "built"
    build(drawn_dir, built)
    ratios = {name: issue_ratio(built / name)[0] for name in candidates}
    kept = [n for n in candidates if ratios[n] >= HIGH_ISSUE_RATIO][:high] + [n for n in candidates if ratios[n] < LOW_ISSUE_RATIO][:low]
    for name in kept:
        spec, threads = candidates[name]
        variants = [v for v in (sharing(spec, threads, rows) for rows in ROWS) if planned(v) is not None]
        for written in (spec, *variants):
            (specs / f"{written['name']}.toml").write_text(dump(written))
        print(
            f"{name}: issue ratio {ratios[name]:.2f}, {spec['dtype']} {spec['hidden']} {' → '.join(op['kind'] for op in spec['op'])}, "
            f"{threads} threads, variants {[v['schedule']['block_m'] for v in variants]}",
            flush=True,
        )
    shutil.rmtree(built)
    build(specs, HERE / "kernels" / "time" / "kernels")


if __name__ == "__main__":
    main(*map(int, sys.argv[1:5]))
