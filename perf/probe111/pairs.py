"""Each planner program NAME of a probe_time.py result against NAME_frag (the same spec hinting variant "fragment"):
both × copy, the fragment program's speed-up over the planner's, and the geometric mean.

    python perf/probe111/pairs.py TIME.json"""

from __future__ import annotations

import json
import math
import sys

rows = {r["kernel"]: r for r in json.load(open(sys.argv[1], encoding="utf-8"))["rows"]}
speedups = []
for name in sorted(n for n in rows if f"{n}_frag" in rows):
    planner, fragment = rows[name], rows[f"{name}_frag"]
    speedup = planner["median_us"] / fragment["median_us"]
    speedups.append(speedup)
    print(f"{name:32s} stream {planner['x_copy']:.3f} × copy  fragment {fragment['x_copy']:.3f} × copy  fragment/stream {speedup:5.3f}")
geomean = math.exp(sum(map(math.log, speedups)) / len(speedups))
faster = sum(s > 1.0 for s in speedups)
print(
    f"{len(speedups)} pairs: fragment/stream geometric mean {geomean:.3f} ×, fragment faster on {faster}, range {min(speedups):.3f}–{max(speedups):.3f}"
)
