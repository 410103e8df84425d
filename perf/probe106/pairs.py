"""Each NAME_old / NAME_new pair of a probe_time.py result: old µs / new µs, their geometric mean, the slowest
new build against its old one, and × copy before and after.

    python perf/probe106/pairs.py TIME.json"""

from __future__ import annotations

import json
import math
import sys

rows = {r["kernel"]: r for r in json.load(open(sys.argv[1], encoding="utf-8"))["rows"]}
pairs = sorted(name.removesuffix("_new") for name in rows if name.endswith("_new") and name.removesuffix("_new") + "_old" in rows)
speedups = []
for name in pairs:
    old, new = rows[name + "_old"], rows[name + "_new"]
    speedups.append(old["median_us"] / new["median_us"])
    print(
        f"{name:20s} {old['tokens']:6d} {old['median_us']:8.2f} → {new['median_us']:8.2f} µs  {speedups[-1]:5.3f} ×  {old['x_copy']:.3f} → {new['x_copy']:.3f} × copy"
    )
geomean = math.exp(sum(map(math.log, speedups)) / len(speedups))
print(f"{len(pairs)} pairs: geometric mean {geomean:.3f} ×, slowest {min(speedups):.3f} ×, fastest {max(speedups):.3f} ×")
