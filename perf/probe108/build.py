"""probe108 (session 49): an fp32 scale's reciprocal without __frcp_rn's slow-path branch (quant_fp8._reciprocal).

Each group's 1/scale was a call of __frcp_rn: MUFU.RCP and one Newton step behind a test of the scale's exponent and
a branch to a slow path, which ptxas brackets in a reconvergence barrier (BSSY/BSYNC) it does not schedule across —
in fp32 LayerNorm → RoPE → FP8 g128 7168, 14 such regions and 14 calls a row on each thread of its 128-thread stream.
An fp32 scale lies where the fast path is the whole call, so the program now writes that path out.

    .venv/bin/python perf/probe108/build.py specs SEED COUNT    # fresh unhinted draws quantising with fp32 scales
    .venv/bin/python perf/probe108/build.py build OLD_TREE      # NAME_old (OLD_TREE: the tree before the change), NAME_new

Specs: the sweep's that quantise with fp32 scales outside a reread program, and the draws. Builds go to
perf/probe108/kernels/time/kernels. On the device `OUT=... bash perf/probe108/call.sh`: rcp_exhaustive.cu, then each
pair timed at its sweep count in interleaved rounds, outputs compared bit for bit (perf/proto/probe_time.py);
`python perf/probe106/pairs.py TIME.json` tabulates them."""

from __future__ import annotations

import random
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for sibling in ("tests", "scripts", "perf/probe50"):
    sys.path.insert(0, str(ROOT / sibling))
import random_hunt  # noqa: E402
from build_rules import build_pairs  # noqa: E402  (untuned builds of two trees)
from test_injection import dump  # noqa: E402

from fusegen.bench import sweep_tokens  # noqa: E402
from fusegen.errors import ChainError, SpecError  # noqa: E402
from fusegen.plan import plan  # noqa: E402
from fusegen.spec import parse_spec  # noqa: E402

HERE = Path(__file__).resolve().parent


def takes_the_change(spec: dict) -> bool:
    """Whether the spec quantises with fp32 scales in a program that is not read in tiles at its sweep count."""
    quant = [op for op in spec["op"] if op["kind"] == "quant_fp8"]
    if not quant or quant[0].get("scale", "fp32") != "fp32":
        return False
    try:
        planned = plan(parse_spec(dump(spec), spec["name"]), spec["name"])
    except (ChainError, SpecError):
        return False
    return planned.route_for(sweep_tokens(spec["hidden"])).schedule.variant != "reread"


def specs(seed: int, count: int) -> None:
    out = HERE / "specs"
    out.mkdir(exist_ok=True)
    found = 0
    for spec, _ in random_hunt.planned_draws(random.Random(seed), 0.0, random_hunt.MODEL_WIDTHS):
        spec = dict(spec, name=f"s108_{seed}_{found:02d}")
        spec.pop("tokens", None)
        if takes_the_change(spec):
            (out / f"{spec['name']}.toml").write_text(dump(spec))
            found += 1
            if found == count:
                return


def main_build(old_tree: Path) -> None:
    sources = [tomllib.loads(p.read_text()) for p in sorted((ROOT / "perf/sweep").glob("*.toml"))]
    sources = [s for s in sources if takes_the_change(s)] + [tomllib.loads(p.read_text()) for p in sorted((HERE / "specs").glob("*.toml"))]
    build_pairs(sources, old_tree, ROOT, HERE / "kernels")


if __name__ == "__main__":
    if sys.argv[1] == "specs":
        specs(int(sys.argv[2]), int(sys.argv[3]))
    else:
        main_build(Path(sys.argv[2]))
