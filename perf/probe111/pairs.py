"""Each planner program NAME of a probe_time.py result against NAME_frag (the same spec hinting variant "fragment"):
both × copy, the fragment program's speed-up over the planner's, and the geometric mean. With KERNELS (the
timed packages' directory), a NAME whose build kept the fragment program over the stream (plan.json's
fragment_over_stream: the same program as NAME_frag, a measure of the run's noise) is marked and left out of
the geometric mean, which is then over the streams the build keeps.

    python perf/probe111/pairs.py TIME.json [KERNELS]"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path


def kept_by_build(kernels: Path, name: str) -> bool:
    return json.loads((kernels / name / "plan.json").read_text(encoding="utf-8")).get("fragment_over_stream") is not None


rows = {r["kernel"]: r for r in json.load(open(sys.argv[1], encoding="utf-8"))["rows"]}
kernels = Path(sys.argv[2]) if len(sys.argv) > 2 else None
speedups, same = [], []
for name in sorted(n for n in rows if f"{n}_frag" in rows):
    planner, fragment = rows[name], rows[f"{name}_frag"]
    speedup = planner["median_us"] / fragment["median_us"]
    kept = kernels is not None and kept_by_build(kernels, name)
    (same if kept else speedups).append(speedup)
    what = "kept  " if kept else "stream"
    print(f"{name:32s} {what} {planner['x_copy']:.3f} × copy  fragment {fragment['x_copy']:.3f} × copy  fragment/planner {speedup:5.3f}")
if same:
    print(f"{len(same)} kept by the build (the same program twice): {min(same):.3f}–{max(same):.3f}")
geomean = math.exp(sum(map(math.log, speedups)) / len(speedups))
faster = sum(s > 1.0 for s in speedups)
print(
    f"{len(speedups)} pairs: fragment/stream geometric mean {geomean:.3f} ×, fragment faster on {faster}, range {min(speedups):.3f}–{max(speedups):.3f}"
)
