"""probe57: the twelve held-out sweep specs of perf/probe56 under 0.90 × copy, each as planned and under schedule
hints the planner did not choose (perf/probe50's set — threads doubled and halved, launch bounds holding a
thread to ~64 and ~96 registers, the stream variant, no prefetch — and the power of two nearest a thread
count that is not one), untuned, so one device call shows which knob each slow row answers to.

    .venv/bin/python perf/probe57/variants.py perf/probe57/kernels      (writes specs/, builds time/kernels)"""

from __future__ import annotations

import importlib.util
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "perf" / "probe50"))
from build_rules import build  # noqa: E402  (the untuned build)
from test_injection import dump  # noqa: E402

from fusegen.errors import ChainError, SpecError  # noqa: E402
from fusegen.plan import plan  # noqa: E402
from fusegen.spec import parse_spec  # noqa: E402

_loaded = importlib.util.spec_from_file_location("probe50_variants", ROOT / "perf" / "probe50" / "variants.py")
probe50 = importlib.util.module_from_spec(_loaded)
_loaded.loader.exec_module(probe50)

HELD_OUT = ROOT / "perf" / "probe56" / "kernels" / "specs"
TIMES = ROOT / "perf" / "probe56" / "results" / "time.log"
SLOW_BELOW = 0.90


def slow_specs() -> list[str]:
    """probe56's specs under SLOW_BELOW × copy."""
    found = re.finditer(r"^(\S+)\s+\d+\s+[\d.]+ us\s+[\d.]+ TB/s ([\d.]+) x copy", TIMES.read_text(), re.M)
    return sorted(m[1] for m in found if float(m[2]) < SLOW_BELOW)


def variants(threads: int) -> dict[str, dict]:
    hints = probe50.variants(threads)
    if threads & (threads - 1):
        nearest = min((1 << k for k in range(5, 11)), key=lambda p: (abs(p - threads), p))
        hints["pow2"] = {"threads": nearest}
    return hints


def main(out: Path) -> None:
    specs = out / "specs"
    specs.mkdir(parents=True)
    for name in slow_specs():
        path = HELD_OUT / f"{name}.toml"
        base = tomllib.loads(path.read_text())
        schedule = probe50.sweep_schedule(plan(parse_spec(path.read_text(), str(path)), str(path)))
        (specs / path.name).write_text(dump(base))
        for suffix, hints in variants(schedule.threads).items():
            spec = dict(base, name=f"{name}_{suffix}", schedule=dict(base.get("schedule", {}), **hints))
            target = specs / f"{spec['name']}.toml"
            try:
                chosen = probe50.sweep_schedule(plan(parse_spec(dump(spec), str(target)), str(target)))
            except (SpecError, ChainError) as exc:
                print(f"{spec['name']}: skipped ({str(exc)[:140]})")
                continue
            keys = ("variant", "threads", "blocks_per_sm", "prefetch")
            if all(getattr(chosen, k) == getattr(schedule, k) for k in keys):
                print(f"{spec['name']}: the planner's own schedule, skipped")
                continue
            target.write_text(dump(spec))
    build(ROOT, specs.resolve(), (out / "time" / "kernels").resolve())


if __name__ == "__main__":
    main(Path(sys.argv[1]))
