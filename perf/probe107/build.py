"""probe107 (session 49): a stream of few warps an SM on twice its threads.

The planner streams a row on the fewest power-of-two threads (from four warps) that hold at most 56 values a thread
(schedule._stream_row), and sizes its grid to the blocks its registers allow (schedule.with_stream). Where that
leaves two blocks of four warps, an SM has eight warps, two a scheduler, to issue a row's arithmetic and hide its
shuffles and barriers. The sweep's fp32 LayerNorm → RoPE → FP8 7168 is such a stream (0.87 × copy); on 224–256
threads, two blocks still, it ran 0.96 (perf/probe65, tuned-below-s34). perf/probe68 doubled the threads of every
stream above 32 values a thread and lost on 16 of 25 — but its losers held twelve warps an SM or fell to one block
(README.md). This probe asks the narrower question on fresh rows: streams of fewer than 16 warps an SM, on twice
the threads where two blocks or more still fit.

    .venv/bin/python perf/probe107/build.py specs SEED COUNT    # fresh unhinted FP8-only draws → specs/
    .venv/bin/python perf/probe107/build.py build               # NAME_old (planner), NAME_new (2 × threads)
    .venv/bin/python perf/probe107/build.py heldout SEED COUNT  # call 2: fresh draws the rule takes → heldout/
    .venv/bin/python perf/probe107/build.py build-heldout OLD_TREE   # NAME_old (OLD_TREE), NAME_new (this tree)

Builds go to perf/probe107/kernels/time/kernels (both) and kernels/check/kernels (the new ones: their reductions
split differently, so they are checked against their references, not bit for bit). Then on the device
`OUT=... ROUNDS=3 bash perf/probe51/call.sh perf/probe107/kernels`; `python perf/probe106/pairs.py TIME.json`."""

from __future__ import annotations

import random
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for sibling in ("tests", "perf/probe50"):
    sys.path.insert(0, str(ROOT / sibling))
import test_random_specs as draws  # noqa: E402
from build_rules import build, build_pairs  # noqa: E402  (untuned builds of a tree, of two)
from test_injection import dump  # noqa: E402

from fusegen.bench import sweep_tokens  # noqa: E402
from fusegen.errors import ChainError, SpecError  # noqa: E402
from fusegen.plan import plan  # noqa: E402
from fusegen.spec import parse_spec  # noqa: E402

HERE = Path(__file__).resolve().parent
WIDTHS = tuple(range(2048, 16385, 64))
FEW_WARPS = 16  # an SM's warps under which a stream is taken


def sweep_schedule(spec: dict):
    """The schedule the spec's plan runs at its sweep count, or None where the planner refuses it."""
    try:
        planned = plan(parse_spec(dump(spec), spec["name"]), spec["name"])
    except (ChainError, SpecError):
        return None
    return planned.route_for(sweep_tokens(spec["hidden"])).schedule


def warps_per_sm(schedule) -> int:
    return schedule.blocks_per_sm * schedule.threads // 32


def doubled(spec: dict, threads: int) -> dict:
    return dict(spec, name=f"{spec['name']}_new", schedule={"variant": "stream", "threads": 2 * threads})


def pair(spec: dict) -> tuple[dict, dict] | None:
    """(old, new) where the planner streams the spec on fewer than FEW_WARPS warps an SM and twice its threads
    still stream in two blocks or more, else None."""
    old = sweep_schedule(spec)
    if old is None or old.variant != "stream" or warps_per_sm(old) >= FEW_WARPS:
        return None
    new = doubled(spec, old.threads)
    planned = sweep_schedule(new)
    if planned is None or planned.variant != "stream" or planned.blocks_per_sm < 2:
        return None
    return dict(spec, name=f"{spec['name']}_old"), new


def drawn(seed: int, count: int, prefix: str, out: Path, keep) -> None:
    """The first `count` fresh unhinted draws that quantise, writing only FP8 (the rows the planner streams), which
    `keep` takes, into `out` as PREFIX_SEED_NN."""
    out.mkdir(exist_ok=True)
    rng = random.Random(seed)
    draws.HIDDENS = WIDTHS
    found = 0
    while found < count:
        spec = draws.draw_valid(rng)
        if "quant_fp8" not in [op["kind"] for op in spec["op"]]:
            continue
        spec = dict(spec, name=f"{prefix}_{seed}_{found:02d}", outputs={"y": False}, schedule={})
        spec.pop("tokens", None)
        if keep(spec):
            (out / f"{spec['name']}.toml").write_text(dump(spec))
            found += 1


def specs(seed: int, count: int) -> None:
    drawn(seed, count, "s107", HERE / "specs", pair)


RULE = "twice the stream's fewest threads"  # schedule._float32_stream_on_more_warps's reason


def heldout(seed: int, count: int) -> None:
    """Fresh float32 draws whose stream this tree's rule takes onto twice its threads."""

    def taken(spec: dict) -> bool:
        schedule = sweep_schedule(spec) if spec["dtype"] == "float32" else None
        return schedule is not None and any(RULE in reason for reason in schedule.reasons)

    drawn(seed, count, "h107", HERE / "heldout", taken)


def build_heldout(old_tree: Path) -> None:
    """The held-out specs as NAME_old by `old_tree` (a worktree of the commit before the rule; the build's workers
    import fusegen from it) and NAME_new by this tree."""
    import tomllib

    build_pairs([tomllib.loads(p.read_text()) for p in sorted((HERE / "heldout").glob("*.toml"))], old_tree, ROOT, HERE / "kernels")


def main_build() -> None:
    import tomllib

    specs_old, specs_new = HERE / "kernels/specs_old", HERE / "kernels/specs_new"
    for directory in (specs_old, specs_new):
        directory.mkdir(parents=True)
    sources = sorted((HERE / "specs").glob("*.toml")) + [ROOT / "perf/sweep/sweep_ln_rope_quant_f32_7168.toml"]
    for path in sources:
        found = pair(tomllib.loads(path.read_text()))
        if found is None:
            print(f"{path.name}: not taken", flush=True)
            continue
        old, new = found
        (specs_old / f"{old['name']}.toml").write_text(dump(old))
        (specs_new / f"{new['name']}.toml").write_text(dump(new))
    time_dir, check_dir = HERE / "kernels/time/kernels", HERE / "kernels/check/kernels"
    build(ROOT, specs_old.resolve(), time_dir.resolve())
    build(ROOT, specs_new.resolve(), (HERE / "kernels/built_new").resolve())
    check_dir.mkdir(parents=True)
    for package in sorted((HERE / "kernels/built_new").iterdir()):
        if (package / "plan.json").is_file():
            shutil.copytree(package, check_dir / package.name)
            package.rename(time_dir / package.name)
    shutil.rmtree(HERE / "kernels/built_new")


if __name__ == "__main__":
    if sys.argv[1] == "specs":
        specs(int(sys.argv[2]), int(sys.argv[3]))
    elif sys.argv[1] == "heldout":
        heldout(int(sys.argv[2]), int(sys.argv[3]))
    elif sys.argv[1] == "build-heldout":
        build_heldout(Path(sys.argv[2]))
    else:
        main_build()
