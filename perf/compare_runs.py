"""Two `fusegen bench` runs of the same kernels side by side: each kernel's fusegen median in the second
run against the first, and which are slower than a margin. Used to show that a change to the generator
left the compiled kernels as fast as before (both runs in one GPU call, so one machine state).

    python perf/compare_runs.py BEFORE/bench.json AFTER/bench.json [--margin 0.01]

Exits 1 when any kernel is slower than the margin in the second run."""

from __future__ import annotations

import argparse
import json
import sys


def medians(path: str) -> dict[tuple[str, int], float]:
    rows = json.load(open(path, encoding="utf-8"))["rows"]
    return {(r["kernel"], r["tokens"]): r["median_us"] for r in rows if r["impl"] == "fusegen"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--margin", type=float, default=0.01, help="allowed slowdown, as a fraction (default 0.01)")
    args = parser.parse_args()
    before, after = medians(args.before), medians(args.after)
    slower = []
    print("| kernel | tokens | before µs | after µs | after / before |\n|---|---:|---:|---:|---:|")
    for key in sorted(before.keys() & after.keys()):
        ratio = after[key] / before[key]
        flag = " **slower**" if ratio > 1 + args.margin else ""
        print(f"| {key[0]} | {key[1]} | {before[key]:.1f} | {after[key]:.1f} | {ratio:.3f}{flag} |")
        if flag:
            slower.append(key)
    missing = sorted(before.keys() ^ after.keys())
    if missing:
        print(f"\nin one run only: {missing}")
    print(f"\n{len(slower)} of {len(before.keys() & after.keys())} kernels slower than {args.margin:.0%}")
    return 1 if slower or missing else 0


if __name__ == "__main__":
    sys.exit(main())
