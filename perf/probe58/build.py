"""probe58: two rules for fragment rows that keep too few blocks an SM, checked on a fresh held-out draw.

- schedule.filled_sm: a launch bound that brings a row left on at most three unbounded blocks an SM toward
  64 KB of rows loading, where the registers the bound leaves (split among the SM's four schedulers, as
  ptxas sizes them: schedule.registers_allotted) still hold the row's values and staged side inputs.
- schedule.wide_stream: the planner's own thread count, where it is not a power of two, joins the powers of
  two the stream may take (perf/probe57: fp32 LayerNorm → FP8 5376 0.67 → 0.95 streamed on its 192 threads).

Built, untuned: scripts/sweep_specs.py's chains at 16 model-like widths neither the committed sweep nor
probe56 had (seed 5801), each as NAME_new (this tree; all kept, the held-out sweep of the new rules) and
NAME_old (the tree before, kept where its schedule differs); probe56's specs likewise, old and new where they
differ. And for every spec of the committed sweep, probe56 and this draw whose fragment program
with_fragment_residency fits two blocks an SM by reading its per-column side inputs where they are used,
a twin that stages them under the same bound (NAME_staged): whether that choice, fitted in session 9 at 12288
and 16384 columns, holds.

    git worktree add /tmp/oldwt <commit before the rules>
    .venv/bin/python perf/probe58/build.py /tmp/oldwt perf/probe58/kernels"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

sys.path.insert(0, str(ROOT / "perf" / "proto"))
from probe_scripts import probe_script  # noqa: E402  (a sibling script)

probe52 = probe_script("probe52")  # its old/new pairs
probe56 = probe_script("probe56")  # its draw of the sweep generator at other widths
from build_rules import build  # noqa: E402  (on the path probe52 put there)
from test_injection import dump  # noqa: E402
from variants import sweep_schedule  # noqa: E402

from fusegen.plan import plan  # noqa: E402
from fusegen.spec import parse_spec  # noqa: E402

SEED = 5801
WIDTHS = (1152, 1664, 2176, 2688, 3456, 3968, 4352, 4864, 5632, 6400, 7424, 7936, 9728, 11264, 12800, 15360)
PROBE56 = ROOT / "perf" / "probe56" / "kernels" / "specs"
SWEEP = ROOT / "perf" / "sweep"
UNSTAGED_FOR_TWO = "read where they are used"  # with_fragment_residency's reason when it unstages for two blocks


def drawn(seed: int = SEED, widths: tuple[int, ...] = WIDTHS, prefix: str = "held58") -> list[dict]:
    """probe56's draw of scripts/sweep_specs.py's specs at `seed` and `widths`, named `prefix`_…"""
    return [tomllib.loads(text) for text in probe56.drawn(seed, widths, prefix).values()]


def staged_twin(base: dict) -> dict | None:
    """`base` with its per-column side inputs staged under its two-block bound, where the planner reads them
    where used to fit two blocks; None elsewhere."""
    schedule = sweep_schedule(plan(parse_spec(dump(base), "spec.toml"), "spec.toml"))
    if schedule.variant != "fragment" or schedule.blocks_per_sm != 2 or not any(UNSTAGED_FOR_TWO in r for r in schedule.reasons):
        return None
    hints = {"variant": "fragment", "threads": schedule.threads, "blocks_per_sm": 2, "prefetch": True}
    return dict(base, name=f"{base['name']}_staged", schedule=dict(base.get("schedule", {}), **hints))


def main(old_tree: Path, out: Path) -> None:
    held = drawn()
    probe56 = [tomllib.loads(p.read_text()) for p in sorted(PROBE56.glob("*.toml"))]
    probe52.build_changed(old_tree, out, held + probe56, keep_new=frozenset(b["name"] for b in held))
    sweep = [tomllib.loads(p.read_text()) for p in sorted(SWEEP.glob("*.toml"))]
    twins = [t for t in map(staged_twin, sweep + probe56 + held) if t is not None]
    staged = out / "specs_staged"
    staged.mkdir()
    for twin in twins:
        (staged / f"{twin['name']}.toml").write_text(dump(twin))
        unstaged = dict(twin, name=twin["name"].replace("_staged", "_unstaged"), schedule=dict(twin["schedule"], prefetch=False))
        (staged / f"{unstaged['name']}.toml").write_text(dump(unstaged))
    build(ROOT, staged.resolve(), (out / "time" / "kernels").resolve())
    print(f"{len(held)} drawn, {len(twins)} staged twins")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
