"""probe68: the stream's thread count. schedule.wide_stream takes the fewest power-of-two threads (from four
warps) that hold at most 56 values a thread; perf/probe65's full tune of fp32 LayerNorm → RoPE → FP8 7168
found that stream 1.10× faster on 256 threads (28 values) than on the planner's 128 (56). Every spec here
streams at its sweep count on more than 32 values a thread: NAME_old is the planner's program, NAME_new the
same stream on twice its threads (hints variant = "stream", threads = 2 × the planner's), both untuned, into
kernels/time/kernels (perf/proto/probe_time.py times them; their reductions differ in order, so outputs are
not compared bit for bit), the _new ones also into kernels/check/kernels (scripts/gpu_hunt.py check).

    .venv/bin/python perf/probe68/build.py perf/probe68/kernels

Specs: the sweep's that qualify and a draw of the generator's chains (seed 6801) at widths of 4096 and more."""

from __future__ import annotations

import random
import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for sibling in ("tests", "scripts", "perf/probe50"):
    sys.path.insert(0, str(ROOT / sibling))
import random_hunt  # noqa: E402
from build_rules import build  # noqa: E402  (an untuned build of a tree)
from test_injection import dump  # noqa: E402

from fusegen.bench import sweep_tokens  # noqa: E402
from fusegen.errors import ChainError, SpecError  # noqa: E402
from fusegen.plan import plan  # noqa: E402
from fusegen.spec import parse_spec  # noqa: E402

SEED, DRAWN = 6801, 24
WIDTHS = tuple(range(4096, 16385, 256))
MOST_VALUES = 32


def streamed_threads(spec: dict) -> int | None:
    """The planner's stream thread count at the spec's sweep count where it holds more than MOST_VALUES a
    thread (and twice the threads still fit a block), else None."""
    try:
        planned = plan(parse_spec(dump(spec), spec["name"]), spec["name"])
    except SpecError:
        return None
    schedule = planned.route_for(sweep_tokens(spec["hidden"])).schedule
    wanted = schedule.variant == "stream" and schedule.elems_per_thread > MOST_VALUES and 2 * schedule.threads <= 1024
    return schedule.threads if wanted else None


def bases() -> list[tuple[dict, int]]:
    found = []
    for path in sorted((ROOT / "perf/sweep").glob("*.toml")):
        spec = tomllib.loads(path.read_text())
        if threads := streamed_threads(spec):
            found.append((spec, threads))
    drawn = 0
    for spec, _ in random_hunt.planned_draws(random.Random(SEED), 0.0, WIDTHS):
        if spec["hidden"] < WIDTHS[0]:
            continue
        spec.pop("tokens", None)
        spec["name"] = f"held68_{SEED}_{drawn:02d}"
        if threads := streamed_threads(spec):
            found.append((spec, threads))
            drawn += 1
            if drawn == DRAWN:
                return found


def main(out: Path) -> None:
    old, new = out / "specs_old", out / "specs_new"
    old.mkdir(parents=True)
    new.mkdir()
    for base, threads in bases():
        doubled = dict(base, name=f"{base['name']}_new", schedule=dict(base.get("schedule", {}), variant="stream", threads=2 * threads))
        try:
            plan(parse_spec(dump(doubled), doubled["name"]), doubled["name"])
        except (ChainError, SpecError) as exc:  # twice the threads may not split the ring's row copy evenly
            print(f"{base['name']}: no stream on {2 * threads} threads ({exc})", flush=True)
            continue
        (old / f"{base['name']}_old.toml").write_text(dump(dict(base, name=f"{base['name']}_old")))
        (new / f"{base['name']}_new.toml").write_text(dump(doubled))
    build(ROOT, old.resolve(), (out / "time" / "kernels").resolve())
    build_new(new, out)


def build_new(new: Path, out: Path) -> None:
    """Builds the specs of `new` beside the _old packages in kernels/time/kernels and copies them into
    kernels/check/kernels: their outputs are checked against their references, not bit for bit."""
    build(ROOT, new.resolve(), (out / "built_new").resolve())
    checked = out / "check" / "kernels"
    checked.mkdir(parents=True)
    for package in sorted((out / "built_new").iterdir()):
        if (package / "plan.json").is_file():
            shutil.copytree(package, checked / package.name)
            package.rename(out / "time" / "kernels" / package.name)
    shutil.rmtree(out / "built_new")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
