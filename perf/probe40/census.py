"""Writes perf/probe40's held-out specs: 16-bit norm → neox cache RoPE chains over whole heads of 64 that
schedule.gathering_row's launch bound may take, now that it holds only where the row's values and staged
per-column side inputs fit the registers it leaves (schedule._few_warps_bound) — a residual add or not, an
RMSNorm or LayerNorm over the row or each head, with or without weight and bias, 6144–8192 columns.

    python perf/probe40/census.py OUT_DIR [--seed N] [--count N]
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "probe23"))
import census_specs  # noqa: E402

WIDTHS = (6144, 6656, 7168, 7680, 8192)


def generate(seed: int, count: int) -> dict[str, dict]:
    rng = random.Random(seed)
    specs = {}
    while len(specs) < count:
        dtype, hidden = rng.choice(("bfloat16", "float16")), rng.choice(WIDTHS)
        norm = rng.choice(({"kind": "rmsnorm", "eps": 1e-6}, {"kind": "layernorm", "eps": 1e-5}))
        if rng.random() < 0.4:
            norm = norm | {"over": "head"}
        if rng.random() < 0.3:
            norm = norm | {"weight": False}
        if norm["kind"] == "layernorm" and rng.random() < 0.3:
            norm = norm | {"bias": False}
        ops = [{"kind": "add_residual"}] if rng.random() < 0.3 else []
        ops += [norm, {"kind": "rope", "rope_dim": 64, "span": "head", "style": "neox", "source": "cache", "max_position": 32768}]
        add = "add_" if len(ops) == 3 else ""
        name = f"c{len(specs):02d}_{add}{norm['kind'][:2]}_{norm.get('over', 'row')}_{dtype.replace('float', 'f')}_{hidden}"
        specs[name] = {"name": name, "dtype": dtype, "hidden": hidden, "head_dim": 64, "op": ops}
    return specs


if __name__ == "__main__":
    sys.exit(census_specs.cli(generate, 40, 32, "perf/probe40's census (census.py --seed {seed}), held out"))
