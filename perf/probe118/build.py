"""probe118 (session 58): chains that add a residual, streamed, against the fragment program, on fresh draws.

The planner's wide-row stream keeps the next row's x in flight through its ring while the current row reduces;
add_residual's residual row is not in that ring (ops/add_residual.py: read into registers in the row's own
layout, so that residual_out may alias residual), so a streamed row still waits on its residual's load with
none of it in flight. On the seven such streams of perf/probe111 and probe112 the fragment program was faster
on both cards: H100 1.021–1.482 ×, H200 1.020–1.777 × (s112_5402_13, fp32 add → LayerNorm → FP8 5120: 0.570 ×
copy streamed, 1.013 as the fragment program). Those seven were seen together; these draws are held out.

    .venv/bin/python perf/probe118/build.py SEED COUNT   # specs/, kernels/time/kernels (CPU)

Fresh draws (random_hunt's, unhinted, half at model widths) whose chain adds a residual and whose planner
program at the sweep count is wide_stream's stream, each built untuned as NAME and NAME_frag (the same spec
hinting variant "fragment"), as probe111 builds its pairs."""

from __future__ import annotations

import random
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "probe111"))
from build import build, random_hunt, written_pair  # noqa: E402  (probe111's)


def main(seed: int, count: int) -> None:
    specs = HERE / "specs"
    shutil.rmtree(specs, ignore_errors=True)
    shutil.rmtree(HERE / "kernels", ignore_errors=True)
    specs.mkdir(parents=True)
    kept = 0
    for drawn, _ in random_hunt.planned_draws(random.Random(seed), 0.0, random_hunt.MODEL_WIDTHS):
        if "tokens" in drawn or not any(op["kind"] == "add_residual" for op in drawn["op"]):
            continue
        if written_pair(dict(drawn, name=f"s118_{seed}_{kept:02d}"), specs):
            kept += 1
            if kept == count:
                break
    build(specs, HERE / "kernels" / "time" / "kernels")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
