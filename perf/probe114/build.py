"""probe114 (session 55): a vector padding the row twice over ranks after narrower ones (schedule.VECTOR_PADDING_LIMIT),
held out on the random-spec test's draws: hinted ones (a pinned thread count leaves only the vector to choose)
and unhinted ones (where it moves only few-token programs of narrow rows).

    .venv/bin/python perf/probe114/build.py specs OLD_TREE SEED COUNT   # draws whose plan the change moves
    .venv/bin/python perf/probe114/build.py build OLD_TREE              # NAME_old (OLD_TREE), NAME_new (this tree)

`specs` plans the first COUNT draws of tests/test_random_specs.py's draw_valid (every op, key and hint) under
OLD_TREE (the tree before the change) and under this tree, hints kept and hints dropped, and writes the ones whose
routes differ: hinted to perf/probe114/specs (at most 40, spread evenly over them, beside perf/probe113's
hunt_5501_007, the row that showed the cost: 0.065 × copy), unhinted to perf/probe114/specs_few (at most 12).
`build` builds each as NAME_old and NAME_new, untuned, side by side in perf/probe114/kernels/time/kernels and
perf/probe114/kernels/few/time/kernels (perf/proto/probe_time.py's pairs: outputs compared, then timed — the
unhinted ones at few tokens, where they changed)."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "perf/probe114"
for sibling in ("tests", "perf/probe50"):
    sys.path.insert(0, str(ROOT / sibling))
import test_random_specs as draws  # noqa: E402
from build_rules import build_pairs  # noqa: E402
from test_injection import dump  # noqa: E402

MOST_SPECS = 40
MOST_FEW = 12
# Each draw's routes as (first tokens, threads, vector elements, padded columns, variant), or its refusal.
ROUTES = """
import json, sys
from fusegen.plan import plan
from fusegen.spec import KernelSpec
out = []
for spec in json.load(sys.stdin):
    try:
        p = plan(KernelSpec.model_validate(spec), "x.toml")
        out.append([[r.first_tokens, r.schedule.threads, r.schedule.vector_elems, r.schedule.padded_hidden, r.schedule.variant] for r in p.routes])
    except Exception as exc:
        out.append(f"{type(exc).__name__}: {exc}")
print(json.dumps(out))
"""


def routes(tree: Path, specs: list[dict]) -> list:
    code = f"import sys; sys.path.insert(0, {str(tree.resolve())!r})\n" + ROUTES
    return json.loads(
        subprocess.run([sys.executable, "-c", code], input=json.dumps(specs), capture_output=True, text=True, check=True).stdout
    )


def moved(old_tree: Path, drawn: list[dict], new_tree: Path = ROOT) -> list[int]:
    """The draws both trees plan (a refusal the old tree made is no pair to time) that `new_tree` (this one unless
    given) plans otherwise."""
    return [
        i
        for i, (old, new) in enumerate(zip(routes(old_tree, drawn), routes(new_tree, drawn)))
        if old != new and not isinstance(old, str) and not isinstance(new, str)
    ]


def write(drawn: list[dict], indices: list[int], most: int, directory: Path, prefix: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)  # a committed draw is written again as it was
    for i in indices[:: max(1, len(indices) // most)][:most]:
        spec = dict(drawn[i], name=f"{prefix}_{i:04d}")
        (directory / f"{spec['name']}.toml").write_text(dump(spec))


def write_specs(old_tree: Path, seed: int, count: int) -> None:
    rng = random.Random(seed)
    hinted = [draws.draw_valid(rng) for _ in range(count)]
    unhinted = [{key: value for key, value in spec.items() if key not in ("schedule", "tokens")} for spec in hinted]
    for drawn, most, directory, prefix in (
        (hinted, MOST_SPECS, HERE / "specs", f"pin_{seed}"),
        (unhinted, MOST_FEW, HERE / "specs_few", f"few_{seed}"),
    ):
        indices = moved(old_tree, drawn)
        print(f"seed {seed}, {directory.name}: {len(indices)} of {count} draws planned otherwise")
        write(drawn, indices, most, directory, prefix)
    shutil.copy(ROOT / "perf/probe113/draw/specs/hunt_5501_007.toml", HERE / "specs")


def unhinted_pairs(old_tree: Path, seed: int, count: int, here: Path, prefix: str, most: int = MOST_SPECS, also=()) -> None:
    """A later probe's held-out pairs: of the first `count` unhinted draws of `seed` (hints and token counts dropped,
    as a user's new spec), those this tree plans otherwise than `old_tree`, at most `most` spread evenly, beside the
    spec files `also`, written to here/specs and built as NAME_old and NAME_new in here/kernels."""
    rng = random.Random(seed)
    drawn = [{k: v for k, v in draws.draw_valid(rng).items() if k not in ("schedule", "tokens")} for _ in range(count)]
    indices = moved(old_tree, drawn)
    print(f"seed {seed}: {len(indices)} of {count} draws planned otherwise")
    write(drawn, indices, most, here / "specs", f"{prefix}_{seed}")
    for path in also:
        shutil.copy(ROOT / path, here / "specs")
    build_pairs([tomllib.loads(p.read_text()) for p in sorted((here / "specs").glob("*.toml"))], old_tree, ROOT, here / "kernels")


def few_pairs(old_tree: Path, new_tree: Path, seed: int, count: int, here: Path, prefix: str, most: int) -> None:
    """A few-token probe's pairs (perf/probe117, perf/probe125): the sweep specs `new_tree` plans otherwise than
    `old_tree`, beside at most `most` of the first `count` unhinted draws of `seed` it plans otherwise (spread
    evenly), written to here/specs_few and built as NAME_old and NAME_new in here/kernels/few (this probe's call
    times them at few tokens)."""
    directory = here / "specs_few"
    sweep = [tomllib.loads(p.read_text()) for p in sorted((ROOT / "perf/sweep").glob("*.toml"))]
    sweep_moved = moved(old_tree, sweep, new_tree)
    print(f"sweep: {len(sweep_moved)} of {len(sweep)} specs planned otherwise")
    rng = random.Random(seed)
    drawn = [{k: v for k, v in draws.draw_valid(rng).items() if k not in ("schedule", "tokens")} for _ in range(count)]
    drawn_moved = moved(old_tree, drawn, new_tree)
    print(f"seed {seed}: {len(drawn_moved)} of {count} draws planned otherwise")
    write(drawn, drawn_moved, most, directory, f"{prefix}_{seed}")
    for i in sweep_moved:
        (directory / f"{sweep[i]['name']}.toml").write_text(dump(sweep[i]))
    build_pairs([tomllib.loads(p.read_text()) for p in sorted(directory.glob("*.toml"))], old_tree, new_tree, here / "kernels/few")


def main_build(old_tree: Path) -> None:
    for specs, kernels in ((HERE / "specs", HERE / "kernels"), (HERE / "specs_few", HERE / "kernels/few")):
        build_pairs([tomllib.loads(p.read_text()) for p in sorted(specs.glob("*.toml"))], old_tree, ROOT, kernels)


if __name__ == "__main__":
    if sys.argv[1] == "specs":
        write_specs(Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    else:
        main_build(Path(sys.argv[2]))
