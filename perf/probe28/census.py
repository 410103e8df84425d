"""Writes perf/probe28's held-out specs: random chains that gather a table row at each token's position
(RoPE with source = "cache") — RMSNorm or LayerNorm → cache RoPE over one span, with or without FP8 after,
MLA's column-range norm → GPT-J cache RoPE on the last 64 columns, QK-norm → cache RoPE in every head of
64, 128 or 256 — at widths where schedule.gathering_row or _gathered_where_used may change the plan.

    python perf/probe28/census.py OUT_DIR [--seed N] [--count N]
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "probe23"))
import census_specs  # noqa: E402
import sweep_specs  # noqa: E402

WIDTHS = {
    "float16": (3072, 4096, 4608, 5120, 6144, 6656, 7168, 7680, 8192, 10240, 12288),
    "bfloat16": (3072, 4096, 4608, 5120, 6144, 6656, 7168, 7680, 8192, 10240, 12288),
    "float32": (3072, 3584, 4096, 4608, 5120, 6144, 7168, 8192, 10240),
}
CHAINS = ("rms_cache", "ln_cache", "rms_cache_quant", "cols_cache", "qk_cache")


def cache_rope(rng: random.Random, dims=(64, 128), **fixed) -> dict:
    op = {"kind": "rope", "rope_dim": rng.choice(dims), "span": rng.choice(("tail", "head")), "style": rng.choice(("neox", "gptj"))}
    return op | fixed | {"source": "cache", "max_position": 32768}


def drawn(rng: random.Random, chains: tuple[str, ...]) -> tuple[str, dict]:
    """A chain's label, then a dtype and a width of WIDTHS for its spec, drawn in that order."""
    chain = rng.choice(chains)
    dtype = rng.choice(sorted(WIDTHS))
    return chain, {"name": "", "dtype": dtype, "hidden": rng.choice(WIDTHS[dtype])}


def generate(seed: int, count: int) -> dict[str, dict]:
    rng = random.Random(seed)
    specs = {}
    while len(specs) < count:
        chain, spec = drawn(rng, CHAINS)
        hidden = spec["hidden"]
        norm = {"kind": "rmsnorm", "eps": 1e-6} if chain != "ln_cache" else {"kind": "layernorm", "eps": 1e-5}
        if chain == "qk_cache":
            head_dim = rng.choice([d for d in sweep_specs.HEAD_DIMS if hidden % d == 0])
            spec["head_dim"] = head_dim
            norm["over"] = "head"
            ops = [norm, cache_rope(rng, dims=[d for d in (64, 128) if d <= head_dim])]
        elif chain == "cols_cache":
            norm["columns"] = [0, hidden - 64]
            ops = [norm, cache_rope(rng, rope_dim=64, span="tail", style="gptj")]
        else:
            ops = [norm, cache_rope(rng)]
        if chain == "rms_cache_quant":
            ops.append({"kind": "quant_fp8", "group_size": rng.choice(sweep_specs._groups_dividing(hidden))})
            spec["outputs"] = {"y": rng.random() < 0.4}
        add_named(specs, "g", chain, spec | {"op": ops})
    return specs


def add_named(specs: dict[str, dict], letter: str, label: str, spec: dict) -> None:
    """`spec` into `specs` under the name LETTER + its draw number, `label`, dtype and width."""
    name = f"{letter}{len(specs):02d}_{label}_{spec['dtype'].replace('float', 'f')}_{spec['hidden']}"
    specs[name] = spec | {"name": name}


if __name__ == "__main__":
    sys.exit(census_specs.cli(generate, 28, 60, "perf/probe28's census (census.py --seed {seed}), held out"))
