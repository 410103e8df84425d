"""How often `fusegen tune --quick K` finds what the full search found, read from full tunes' tune.json
(every candidate's times): per kernel and token bucket, quick times the planner's schedule and the K − 1
candidates `tune.rank_key` ranks highest, and keeps the fastest of them. A hit is quick's pick being
the full search's winner; "within 2 %" counts picks no more than tune's margin slower.

    python scripts/quick_tune_check.py SPEC_DIR TUNE_JSON... [--k 4 8 16]

SPEC_DIR holds the specs the tunes ran (kernel names `<spec>` or `<spec>_<dtype>_<hidden>` as
`fusegen tune --hidden/--dtype` names its variants). Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fusegen.build import collect_spec_files, load_and_plan
from fusegen.errors import ChainError
from fusegen.plan import plan
from fusegen.spec import KernelSpec, ScheduleHints
from fusegen.tune import MARGIN, Candidate, quick_candidates

DTYPES = ("float16", "bfloat16", "float32")


def spec_named(kernel: str, specs: dict[str, KernelSpec]) -> KernelSpec | None:
    if kernel in specs:
        return specs[kernel]
    for dtype in DTYPES:
        base, _, hidden = kernel.rpartition("_")
        if base.endswith(f"_{dtype}") and base.removesuffix(f"_{dtype}") in specs and hidden.isdigit():
            return specs[base.removesuffix(f"_{dtype}")].model_copy(update={"name": kernel, "dtype": dtype, "hidden": int(hidden)})
    return None


def outcomes(problem: dict, spec: KernelSpec, k: int) -> list[tuple[bool, bool]]:
    """(hit, within the margin) per token bucket the full tune timed."""
    found = []
    for entry in problem["candidates"]:
        hints = ScheduleHints.model_validate({**spec.schedule.model_dump(), **entry["hints"]})
        try:
            candidate_plan = plan(spec.model_copy(update={"schedule": hints}), "<check>")
        except ChainError:
            continue  # a candidate this tree no longer plans is not one quick could pick
        found.append((Candidate(entry["hints"], candidate_plan), entry))
    if not found:
        return []
    chosen = {id(c) for c in quick_candidates([c for c, _ in found], k)}
    results = []
    for tokens in found[0][1]["median_us"]:
        timed = [(e["median_us"][tokens], c) for c, e in found if not e["rejected"] and tokens in e["median_us"]]
        quick = [(us, c) for us, c in timed if id(c) in chosen]
        if not timed or not quick:
            continue
        best, quick_best = min(us for us, _ in timed), min(us for us, _ in quick)
        results.append((quick_best == best, quick_best <= best * (1 + MARGIN)))
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spec_dir")
    parser.add_argument("tune_json", nargs="+")
    parser.add_argument("--k", type=int, nargs="+", default=[4, 8, 16])
    args = parser.parse_args(argv)
    specs = {p.name: KernelSpec.model_validate(p.spec) for p in load_and_plan(collect_spec_files([Path(args.spec_dir)]))}
    print("| tune.json | K | buckets | quick found the winner | within 2 % |")
    print("|---|---:|---:|---:|---:|")
    for path in args.tune_json:
        problems = json.loads(Path(path).read_text())["problems"]
        for k in args.k:
            rows = [o for p in problems if (spec := spec_named(p["kernel"], specs)) for o in outcomes(p, spec, k)]
            hits, near = sum(h for h, _ in rows), sum(n for _, n in rows)
            print(f"| {path} | {k} | {len(rows)} | {hits} ({hits / max(len(rows), 1):.0%}) | {near} ({near / max(len(rows), 1):.0%}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
