"""probe108 (session 49): an fp32 scale's reciprocal without __frcp_rn's slow-path branch (quant_fp8._reciprocal).

Each group's 1/scale was a call of __frcp_rn: MUFU.RCP and one Newton step behind a test of the scale's exponent and
a branch to a slow path, which ptxas brackets in a reconvergence barrier (BSSY/BSYNC) it does not schedule across —
in fp32 LayerNorm → RoPE → FP8 g128 7168, 14 such regions and 14 calls a row on each thread of its 128-thread stream.
An fp32 scale lies where the fast path is the whole call, so the program now writes that path out.

    .venv/bin/python perf/probe108/build.py specs SEED COUNT    # fresh unhinted draws quantising with fp32 scales
    .venv/bin/python perf/probe108/build.py weak SEED COUNT     # the same, 16-bit LayerNorm chains in groups of 16–64
    .venv/bin/python perf/probe108/build.py build OLD_TREE      # NAME_old (OLD_TREE: the tree before the change), NAME_new

Specs: the sweep's that quantise with fp32 scales outside a reread program, the draws, and the rows of probe103's
held-out draw (session 45) that the change takes and that ran under 0.90 × copy there (WEAK_HELD_OUT: column-major
g64, 16-bit LayerNorm → cache RoPE → FP8 in groups of 16 and 32, a 576-column cache RoPE → rescale → FP8 g16) — the families
NOTES.md names where untuned draws fall short, with several groups a thread. Builds go to
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


# probe103's held-out rows under 0.90 × copy that quantise with fp32 scales (perf/probe103/README.md).
WEAK_HELD_OUT = ("hunt_4501_023", "hunt_4501_042", "hunt_4501_048", "hunt_4501_058")


def small_group_layernorm(spec: dict) -> bool:
    """A 16-bit LayerNorm chain quantising in groups of 16–64: NOTES.md's second weak family of untuned draws."""
    quant = [op for op in spec["op"] if op["kind"] == "quant_fp8"]
    return (
        spec["dtype"] != "float32"
        and any(op["kind"] == "layernorm" for op in spec["op"])
        and bool(quant)
        and quant[0].get("group_size") in (16, 32, 64)
    )


def specs(seed: int, count: int, family=lambda spec: True) -> None:
    out = HERE / "specs"
    out.mkdir(exist_ok=True)
    found = 0
    for spec, _ in random_hunt.planned_draws(random.Random(seed), 0.0, random_hunt.MODEL_WIDTHS):
        spec = dict(spec, name=f"s108_{seed}_{found:02d}")
        spec.pop("tokens", None)
        if family(spec) and takes_the_change(spec):
            (out / f"{spec['name']}.toml").write_text(dump(spec))
            found += 1
            if found == count:
                return


def main_build(old_tree: Path) -> None:
    sources = [tomllib.loads(p.read_text()) for p in sorted((ROOT / "perf/sweep").glob("*.toml"))]
    held_out = [tomllib.loads((ROOT / "perf/probe103/draw/specs" / f"{name}.toml").read_text()) for name in WEAK_HELD_OUT]
    drawn = [tomllib.loads(p.read_text()) for p in sorted((HERE / "specs").glob("*.toml"))]
    sources = [s for s in sources + held_out if takes_the_change(s)] + drawn
    build_pairs(sources, old_tree, ROOT, HERE / "kernels")


if __name__ == "__main__":
    if sys.argv[1] in ("specs", "weak"):
        specs(int(sys.argv[2]), int(sys.argv[3]), small_group_layernorm if sys.argv[1] == "weak" else lambda spec: True)
    else:
        main_build(Path(sys.argv[2]))
