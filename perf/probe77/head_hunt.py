"""probe77's per-head hunt: 40 specs with a per-head norm over heads of 24–384 columns in rows of 1–40 heads,
every dtype, with residual add, rescale, RoPE (per token or from a cache), FP8 groups or per token, and now
and then a variant or thread hint — those the planner accepts, written to DIR/specs for `fusegen build`
(untuned), whose CUDA checks then run, and for scripts/gpu_hunt.py check on the device.

    .venv/bin/python perf/probe77/head_hunt.py DIR [SEED] && echo '{}' > DIR/no-tuning.json
    .venv/bin/fusegen build DIR/specs --out DIR/kernels --tuning DIR/no-tuning.json"""

from __future__ import annotations

import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from test_injection import dump  # noqa: E402
from test_random_specs import per_head_fits  # noqa: E402

from fusegen.errors import ChainError, SpecError  # noqa: E402
from fusegen.plan import plan  # noqa: E402
from fusegen.spec import parse_spec  # noqa: E402

SEED, COUNT = 3777, 40
ELEMENT_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4}
HINTS = (None, None, {"variant": "stream"}, {"variant": "reread"}, {"block_m": 2}, {"threads": 128}, {"threads": 256})


def draw(rng: random.Random, name: str) -> dict | None:
    head = rng.choice([24, 40, 56, 80, 96, 112, 160, 192, 320, 384])
    hidden = head * rng.choice([1, 2, 3, 5, 8, 12, 16, 24, 32, 40])
    dtype = rng.choice(list(ELEMENT_BYTES))
    if hidden > 16384 or not per_head_fits(head, hidden, ELEMENT_BYTES[dtype]):
        return None
    ops = [{"kind": "add_residual"}] if rng.random() < 0.3 else []
    norm = {"kind": rng.choice(["rmsnorm", "layernorm"]), "over": "head"}
    ops.append(norm)
    if rng.random() < 0.3:
        ops.append({"kind": "rescale", "factor": 0.5})
    if rng.random() < 0.6:
        rope_dim = rng.choice([d for d in (2, 8, 16, 32, 64, head) if d <= head and d % 2 == 0])
        rope = {"kind": "rope", "rope_dim": rope_dim, "span": rng.choice(["head", "tail"]), "style": rng.choice(["neox", "gptj"])}
        if rng.random() < 0.4:
            rope.update(source="cache", max_position=4096)
        ops.append(rope)
    if rng.random() < 0.5:
        quant = {"kind": "quant_fp8", "group_size": rng.choice(["token"] + [g for g in (8, 16, 32, 64, 128) if hidden % g == 0])}
        if quant["group_size"] != "token" and rng.random() < 0.3:
            quant["scale_layout"] = "column"
        ops.append(quant)
    spec = {"name": name, "dtype": dtype, "hidden": hidden, "head_dim": head, "op": ops}
    if norm["kind"] == "rmsnorm" or rng.random() < 0.5:
        spec["outputs"] = {"rstd": True}
    if hint := rng.choice(HINTS):
        spec["schedule"] = hint
    return spec


def main(out: Path, seed: int) -> None:
    specs = out / "specs"
    specs.mkdir(parents=True)
    rng = random.Random(seed)
    made = 0
    while made < COUNT:
        spec = draw(rng, f"hh_{made:02d}")
        if spec is None:
            continue
        try:
            plan(parse_spec(dump(spec), spec["name"]), spec["name"])
        except (ChainError, SpecError):  # a hint the planner cannot meet on this row
            continue
        (specs / f"{spec['name']}.toml").write_text(dump(spec))
        made += 1


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else SEED)
