"""probe111 (session 53): the planner's wide-row stream against the fragment program it replaces, on fresh draws.

perf/probe109's call (H200, session 53) timed, beside its rows, the planner's programs of 16-bit LayerNorm → per-token
FP8 at 5120, 6144 and 7168 columns — streams, taken by schedule.wide_stream — against the fragment program of one
row a block on the same threads: the fragment program ran 0.94-0.95 × copy, the streams 0.77-0.83. wide_stream's
threshold (at most four fragment blocks an SM) was fitted on the planner's register estimate (perf/probe16-18),
before compiling raised a fragment program's launch bound wherever ptxas meets it without spilling
(schedule.ptxas_bound_trials): those three fragment programs hold 6-7 blocks an SM, the estimate said 4. A rule
fitted to three rows needs rows it was not fitted to: these are fresh draws (random_hunt's, unhinted, half at
model widths) whose planner program at the sweep count is such a stream, and the sweep's specs whose program is,
each built untuned as NAME and as NAME_frag, the same spec hinting variant "fragment".

    .venv/bin/python perf/probe111/build.py SEED COUNT [PROBE]   # PROBE/specs, PROBE/kernels/time/kernels (CPU)

PROBE defaults to this directory; its name gives the specs' prefix (probe111: s111_SEED_NN). On the device:
`bash perf/probe111/call.sh` (README.md); perf/probe112 draws the same way, built after the build's rule landed."""

from __future__ import annotations

import random
import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
for sibling in ("tests", "scripts", "perf/probe109"):
    sys.path.insert(0, str(ROOT / sibling))
import random_hunt  # noqa: E402  (the CPU hunt's draws)
from rows_hints import build, planned  # noqa: E402  (probe109's)
from test_injection import dump  # noqa: E402

from fusegen.bench import sweep_tokens  # noqa: E402

STREAM_REASON = "variant auto → stream"


def streamed(spec: dict) -> bool:
    """Whether the planner's program at the spec's sweep count is the stream wide_stream takes."""
    kernel_plan = planned(spec)
    if kernel_plan is None:
        return False
    schedule = kernel_plan.route_for(sweep_tokens(spec["hidden"])).schedule
    return schedule.variant == "stream" and any(reason.startswith(STREAM_REASON) for reason in schedule.reasons)


def main(seed: int, count: int, probe: Path = HERE) -> None:
    specs = probe / "specs"
    shutil.rmtree(specs, ignore_errors=True)
    shutil.rmtree(probe / "kernels", ignore_errors=True)
    specs.mkdir(parents=True)
    prefix = probe.name.replace("probe", "s")
    kept = 0
    for drawn, _ in random_hunt.planned_draws(random.Random(seed), 0.0, random_hunt.MODEL_WIDTHS):
        if "tokens" in drawn:  # a pinned count is timed only there, not at the sweep count
            continue
        if written_pair(dict(drawn, name=f"{prefix}_{seed}_{kept:02d}"), specs):
            kept += 1
            if kept == count:
                break
    for path in sorted((ROOT / "perf" / "sweep").glob("*.toml")):
        written_pair(tomllib.loads(path.read_text()), specs)
    build(specs, probe / "kernels" / "time" / "kernels")


def written_pair(spec: dict, specs: Path) -> bool:
    """Writes the spec and its NAME_frag into `specs` where the planner streams it at its sweep count."""
    if not streamed(spec):
        return False
    fragment = dict(spec, name=f"{spec['name']}_frag", schedule={"variant": "fragment"})
    if planned(fragment) is None:
        return False
    for written in (spec, fragment):
        (specs / f"{written['name']}.toml").write_text(dump(written))
    print(f"{spec['name']}: {spec['dtype']} {spec['hidden']} {' → '.join(op['kind'] for op in spec['op'])}", flush=True)
    return True


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), *(Path(arg).resolve() for arg in sys.argv[3:4]))
