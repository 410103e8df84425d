"""Each planner program NAME of a probe_time.py result against its NAME_rR variants (R rows sharing the threads):
the planner's µs and × copy, each R's speed-up over it, the best R of two or more (R = 1 is one row a block:
the planner's program where the planner writes a fragment), and the geometric mean of the best.

    python perf/probe109/rows.py TIME.json"""

from __future__ import annotations

import json
import math
import re
import sys

rows = {r["kernel"]: r for r in json.load(open(sys.argv[1], encoding="utf-8"))["rows"]}
variant = re.compile(r"^(?P<name>.+)_r(?P<rows>\d+)$")
by_name: dict[str, dict[int, dict]] = {}
for kernel, row in rows.items():
    match = variant.match(kernel)
    if match and match["name"] in rows:
        by_name.setdefault(match["name"], {})[int(match["rows"])] = row
best_speedups = []
for name in sorted(by_name):
    planner = rows[name]
    speedups = {count: planner["median_us"] / row["median_us"] for count, row in sorted(by_name[name].items())}
    best = max((count for count in speedups if count > 1), key=speedups.get)
    best_speedups.append(speedups[best])
    columns = "  ".join(f"R={count} {speedup:5.3f}" for count, speedup in speedups.items())
    print(f"{name:48s} {planner['median_us']:8.2f} µs {planner['x_copy']:.3f} × copy  {columns}  best R={best}")
geomean = math.exp(sum(map(math.log, best_speedups)) / len(best_speedups))
print(f"{len(best_speedups)} rows: best R's geometric mean {geomean:.3f} ×, slowest {min(best_speedups):.3f} ×")
