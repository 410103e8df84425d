"""Writes perf/probe37's held-out specs: random chains that schedule.gathering_row's launch bound
(FEW_WARPS_BOUNDS) may take — a norm (RMSNorm or LayerNorm, over the row or each head, with or without its
weight) → neox cache RoPE over whole heads of 64 — in 16-bit rows of 6144–8192 columns, and float32 ones the
rule leaves alone.

    python perf/probe37/census.py OUT_DIR [--seed N] [--count N]
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "probe23"))
import census_specs  # noqa: E402

WIDTHS = (6144, 6656, 7168, 7680, 8192)
DTYPES = ("bfloat16", "float16", "float16", "bfloat16", "float32")


def generate(seed: int, count: int) -> dict[str, dict]:
    rng = random.Random(seed)
    specs = {}
    while len(specs) < count:
        dtype, hidden = rng.choice(DTYPES), rng.choice(WIDTHS)
        norm = rng.choice(({"kind": "rmsnorm", "eps": 1e-6}, {"kind": "layernorm", "eps": 1e-5}))
        if rng.random() < 0.6:
            norm = norm | {"over": "head"}
        if norm["kind"] == "rmsnorm" and rng.random() < 0.4:
            norm = norm | {"weight": False}
        rotation = {"kind": "rope", "rope_dim": 64, "span": "head", "style": "neox", "source": "cache", "max_position": 32768}
        name = f"b{len(specs):02d}_{norm['kind'][:2]}_{norm.get('over', 'row')}_{dtype.replace('float', 'f')}_{hidden}"
        specs[name] = {"name": name, "dtype": dtype, "hidden": hidden, "head_dim": 64, "op": [norm, rotation]}
    return specs


if __name__ == "__main__":
    sys.exit(census_specs.cli(generate, 37, 24, "perf/probe37's census (census.py --seed {seed}), held out"))
