"""Writes perf/probe34's held-out specs: random chains in the classes the session-22 rules change — a
reduction (an FP8 amax, per token or in groups) after a cache RoPE over one span (RMSNorm, LayerNorm or
MLA's column-range norm first; 64- or 128-column spans; Y written or not), and QK-norm → cache RoPE in
every head whose neox partners sit four lanes apart or over part of each head — at 3072–12288 columns.

    python perf/probe34/census.py OUT_DIR [--seed N] [--count N]
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[2] / "scripts"))
sys.path.insert(0, str(HERE.parents[1] / "probe23"))
import census_specs  # noqa: E402
import sweep_specs  # noqa: E402

# perf/probe28's census, by path: this module is a `census` too.
_probe28 = importlib.util.spec_from_file_location("probe28_census", HERE.parents[1] / "probe28" / "census.py")
probe28_census = importlib.util.module_from_spec(_probe28)
_probe28.loader.exec_module(probe28_census)
cache_rope = probe28_census.cache_rope

NORMS = {"rms": {"kind": "rmsnorm", "eps": 1e-6}, "ln": {"kind": "layernorm", "eps": 1e-5}}
CHAINS = ("rms_cache_quant", "ln_cache_quant", "cols_cache_quant", "qk_cache_crowded")
# QK-norm rotations whose code crowds four warps in 16-bit rows (rope.FEW_WARPS_MIN_PARTNER_LANES): neox
# over heads of 64, or over part of each head.
CROWDED = ((64, 64, "head"), (128, 64, "tail"), (128, 64, "head"), (256, 128, "head"), (256, 64, "tail"), (256, 128, "tail"))


def generate(seed: int, count: int) -> dict[str, dict]:
    rng = random.Random(seed)
    specs = {}
    while len(specs) < count:
        chain, spec = probe28_census.drawn(rng, CHAINS)
        hidden = spec["hidden"]
        if chain == "qk_cache_crowded":
            head_dim, rope_dim, span = rng.choice([c for c in CROWDED if hidden % c[0] == 0])
            spec["head_dim"] = head_dim
            rotation = cache_rope(rng, rope_dim=rope_dim, span=span, style="neox")
            ops = [NORMS["rms"] | {"over": "head", "weight": rng.random() < 0.5}, rotation]
        else:
            norm = dict(NORMS["ln" if chain == "ln_cache_quant" else "rms"])
            if chain == "cols_cache_quant":
                norm["columns"] = [0, hidden - 64]
                rotation = cache_rope(rng, rope_dim=64, span="tail", style="gptj")
            else:
                rotation = cache_rope(rng)
            quant = {"kind": "quant_fp8", "group_size": rng.choice(sweep_specs._groups_dividing(hidden))}
            ops = [norm, rotation, quant]
            spec["outputs"] = {"y": rng.random() < 0.3}
        probe28_census.add_named(specs, "h", chain.removesuffix("_quant"), spec | {"op": ops})
    return specs


if __name__ == "__main__":
    sys.exit(census_specs.cli(generate, 34, 120, "perf/probe34's census (census.py --seed {seed}), held out"))
