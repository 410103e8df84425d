"""Writes perf/probe46's specs: a fresh draw (seed 46) of perf/probe43's wide chains, and the 16-bit
LayerNorm chain schedule.wide_stream was measured on (fp16 LayerNorm → RoPE → FP8 g128 8192, no Y: 0.47
fragment → 0.82 streamed), which the two-pass reread rule now takes — for the held-out check of
schedule.REREAD_TWO_PASS_* and REREAD_HELD_TILES.

    python perf/probe46/census.py OUT_DIR [--seed N] [--count N]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "perf" / "probe23"))
sys.path.insert(0, str(ROOT / "perf" / "probe43"))
import census  # noqa: E402
import census_specs  # noqa: E402

STREAMED = {
    "s00_ln_rope_quant_f16_8192": {
        "name": "",
        "dtype": "float16",
        "hidden": 8192,
        "op": [{"kind": "layernorm"}, {"kind": "rope", "rope_dim": 64}, {"kind": "quant_fp8", "group_size": 128}],
        "outputs": {"y": False},
    }
}


def generate(seed: int, count: int) -> dict[str, dict]:
    specs = census.generate(seed, count)
    for name, spec in STREAMED.items():
        specs[name] = {**spec, "name": name}
    return specs


if __name__ == "__main__":
    sys.exit(census_specs.cli(generate, 46, 60, "perf/probe46's census (census.py --seed {seed}), held out"))
