"""probe50's variant specs: each held-out spec of perf/probe47's draw (seed 4702) that ran under 0.80 × copy,
rebuilt with schedule hints the planner did not choose — threads doubled and halved, a launch bound of more
blocks (a thread held to ~64 or ~96 registers), the stream variant, no prefetch — so one device call shows which knob each slow row answers to.

    .venv/bin/python perf/probe50/variants.py perf/probe50/kernels/variants     (then fusegen build there)

Hints a row refuses (a thread count that does not cover it, a stream it cannot hold) are skipped: the
build's own error says why, and the variant is left out."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from test_injection import dump  # noqa: E402

from fusegen.bench import sweep_tokens  # noqa: E402
from fusegen.errors import ChainError, SpecError  # noqa: E402
from fusegen.plan import plan  # noqa: E402
from fusegen.spec import parse_spec  # noqa: E402

HELD_OUT = ROOT / "perf/probe47/kernels/perf/specs"
SLOW = ("029", "023", "008", "046", "040", "026", "011", "015", "004", "045", "054", "051", "019", "047")


def sweep_schedule(planned):
    """The schedule of the program that runs at the spec's sweep count."""
    return next(r for r in planned.routes if r.serves(sweep_tokens(planned.hidden))).schedule


def variants(threads: int) -> dict[str, dict]:
    return {
        "t2x": {"threads": threads * 2},
        "thalf": {"threads": threads // 2},
        # launch bounds holding a thread to ~64 and ~96 registers
        "b64": {"variant": "fragment", "threads": threads, "blocks_per_sm": max(1, 1024 // threads)},
        "b96": {"variant": "fragment", "threads": threads, "blocks_per_sm": max(1, 65536 // (96 * threads))},
        "stream": {"variant": "stream"},
        "nopf": {"prefetch": False},
    }


def main(out: Path) -> None:
    specs = out / "specs"
    specs.mkdir(parents=True)
    for key in SLOW:
        path = HELD_OUT / f"hunt_4702_{key}.toml"
        text = path.read_text()
        base = tomllib.loads(text)
        schedule = sweep_schedule(plan(parse_spec(text, str(path)), str(path)))
        (specs / path.name).write_text(dump(base))
        for suffix, hints in variants(schedule.threads).items():
            spec = dict(base, name=f"{base['name']}_{suffix}", schedule=dict(base.get("schedule", {}), **hints))
            target = specs / f"{spec['name']}.toml"
            try:
                planned = plan(parse_spec(dump(spec), str(target)), str(target))
            except (SpecError, ChainError) as exc:
                print(f"{spec['name']}: skipped ({str(exc)[:140]})")
                continue
            chosen = sweep_schedule(planned)
            if (chosen.variant, chosen.threads, chosen.blocks_per_sm, chosen.prefetch) == (
                schedule.variant,
                schedule.threads,
                schedule.blocks_per_sm,
                schedule.prefetch,
            ):
                print(f"{spec['name']}: the planner's own schedule, skipped")
                continue
            target.write_text(dump(spec))
            print(f"{spec['name']}: {chosen.variant} {chosen.threads} threads, {chosen.blocks_per_sm} blocks, prefetch {chosen.prefetch}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
