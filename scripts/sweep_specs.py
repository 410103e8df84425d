"""Writes the sweep specs of issue 16 into perf/sweep/ (or the directory given): chains at widths the
examples never had, judged untuned against the copy ceiling by `scripts/gpu_sweep.sh`.

    python scripts/sweep_specs.py [OUT_DIR] [--seed N]

The axes and what covers them:
- width: every hidden in WIDTHS (512 … 16384, the powers of two and the model widths that are not:
  1536, 2560, 2880, 3072, 3584, 3840, 5120, 6144, 7168, 12288), each with three chains;
- chain: every op kind alone or chained as models use them — rmsnorm and layernorm (with and without
  weight/bias), RoPE (neox/gptj, head/tail, per-token cos/sin or a cos_sin cache), FP8 quantisation
  (groups 32/64/128 and per token, e4m3fn/e5m2, fp32/ue8m0 scales, row or column scale layout) and the
  residual add — with and without Y;
- dtype: float16, bfloat16 and float32.

Then the chains real models run without a norm, or with a rescale (MODEL_CHAINS: activation quant for a
GEMM, RoPE → FP8, DeepSeek-V3's q_b RoPE over heads of 192, residual add → rescale (LayerScale) with and
without quant, the softmax scale after QK-norm and RoPE), one width each, drawn by a generator of their own
so the chains above keep their files.

Chains take turns over the widths so every chain meets narrow and wide rows; the seeded generator
draws the free choices (dtype, RoPE style and span, group size among those dividing the width, fp8
format) and then checks that every value of every axis appears, so a change here cannot quietly
drop one. The same seed writes the same files byte for byte.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

WIDTHS = (512, 768, 1024, 1536, 2048, 2560, 2880, 3072, 3584, 3840, 4096, 5120, 6144, 7168, 8192, 12288, 16384)
SPECS_PER_WIDTH = 3
DTYPES = ("float16", "bfloat16", "float32")
GROUPS = (32, 64, 128, "token")
ROPE_DIMS = (64, 128)

# Each chain: a label (the spec's name stem) and the op kinds in order; the generator fills their keys.
CHAINS = (
    ("rms", ("rmsnorm",)),
    ("ln", ("layernorm",)),
    ("rms_rope", ("rmsnorm", "rope")),
    ("ln_rope", ("layernorm", "rope")),
    ("rms_quant", ("rmsnorm", "quant_fp8")),
    ("ln_quant", ("layernorm", "quant_fp8")),
    ("rms_rope_quant", ("rmsnorm", "rope", "quant_fp8")),
    ("rms_rope_quant_y", ("rmsnorm", "rope", "quant_fp8")),
    ("add_rms", ("add_residual", "rmsnorm")),
    ("add_rms_quant", ("add_residual", "rmsnorm", "quant_fp8")),
    ("rms_cache_rope", ("rmsnorm", "rope")),
    ("ln_rope_quant", ("layernorm", "rope", "quant_fp8")),
    ("qk_norm_rope", ("rmsnorm", "rope")),
    ("cols_norm_rope", ("rmsnorm", "rope")),
)
HEAD_DIMS = (64, 128, 256)
# (label, op kinds, hidden, head_dim or None): one spec each, at widths of the models that run them.
MODEL_CHAINS = (
    ("quant", ("quant_fp8",), 7168, None),
    ("rope_quant", ("rope", "quant_fp8"), 4096, None),
    ("mla_q_rope", ("rope",), 12288, 192),
    ("add_rescale_quant", ("add_residual", "rescale", "quant_fp8"), 5120, None),
    ("rms_rescale_quant", ("rmsnorm", "rescale", "quant_fp8"), 2880, None),
    ("qk_norm_rope_rescale", ("rmsnorm", "rope", "rescale"), 3072, 128),
    ("add_rescale", ("add_residual", "rescale"), 8192, None),
)


# The untuned shapes issue 16 measured short of 0.90 × copy on the H200 (16384 tokens), kept as they were.
ISSUE_SHAPES = {
    "issue_rms_rope_g128_bf16_5120": {  # 0.62; tuned: stream, 160 threads, 0.85
        "dtype": "bfloat16",
        "hidden": 5120,
        "op": [
            {"kind": "rmsnorm", "eps": 1e-6},
            {"kind": "rope", "rope_dim": 64},
            {"kind": "quant_fp8", "group_size": 128},
        ],
        "outputs": {"y": False},
    },
    "issue_rms_gptj_head_ue8m0_g128_bf16_1024": {  # 0.72; tuned 0.85
        "dtype": "bfloat16",
        "hidden": 1024,
        "op": [
            {"kind": "rmsnorm", "eps": 1e-6},
            {"kind": "rope", "rope_dim": 64, "span": "head", "style": "gptj"},
            {"kind": "quant_fp8", "group_size": 128, "scale": "ue8m0"},
        ],
        "outputs": {"y": False},
    },
    "issue_ln_f16_1536": {"dtype": "float16", "hidden": 1536, "op": [{"kind": "layernorm", "eps": 1e-5}]},  # 0.83; tuned 0.91
    "issue_ln_e5m2_token_bf16_2880": {  # 0.80
        "dtype": "bfloat16",
        "hidden": 2880,
        "op": [{"kind": "layernorm", "eps": 1e-5}, {"kind": "quant_fp8", "group_size": "token", "fp8": "e5m2"}],
        "outputs": {"y": False},
    },
    "issue_rms_no_weight_f16_8192": {"dtype": "float16", "hidden": 8192, "op": [{"kind": "rmsnorm", "eps": 1e-6, "weight": False}]},  # 0.88
}


def _groups_dividing(hidden: int) -> list:
    return [g for g in GROUPS if g == "token" or hidden % g == 0]


def _op(kind: str, label: str, hidden: int, rng: random.Random) -> dict:
    if kind == "rmsnorm":
        op = {"kind": kind, "eps": 1e-6}
        if label.startswith("qk_norm_rope"):
            op["over"] = "head"
        elif label == "cols_norm_rope":
            op["columns"] = [0, hidden - 64]  # the RoPE's 64-column tail passes through the norm
        if rng.random() < 0.2:
            op["weight"] = False
        elif label.startswith("add_") and rng.random() < 0.5:
            op["weight_offset"] = 1.0  # Gemma's (1 + w)
        return op
    if kind == "layernorm":
        op = {"kind": kind, "eps": 1e-5}
        if rng.random() < 0.25:
            op["bias"] = False
        return op
    if kind == "rope":
        op = {
            "kind": kind,
            "rope_dim": rng.choice(ROPE_DIMS),
            "span": rng.choice(("tail", "head")),
            "style": rng.choice(("neox", "gptj")),
        }
        if label in ("rms_cache_rope", "qk_norm_rope", "qk_norm_rope_rescale", "mla_q_rope"):
            op |= {"source": "cache", "max_position": 32768}
        if label in ("cols_norm_rope", "mla_q_rope"):
            op |= {"rope_dim": 64, "span": "tail", "style": "gptj"}
        return op
    if kind == "quant_fp8":
        op = {"kind": kind, "group_size": rng.choice(_groups_dividing(hidden))}
        if rng.random() < 0.25:
            op["fp8"] = "e5m2"
        if rng.random() < 0.3:
            op["scale"] = "ue8m0"
        if label == "add_rms_quant" and rng.random() < 0.6:
            op["scale_layout"] = "column"  # DeepSeek-V3's layout for its FP8 GEMM
        return op
    if kind == "rescale":
        # A softmax scale 1/√128, a power of two, or LayerScale's γ alone (factor 1 with its weight).
        op = {"kind": kind, "factor": rng.choice((0.08838834764831845, 0.125, 1.0))}
        if op["factor"] == 1.0 or rng.random() < 0.4:
            op["weight"] = True
        return op
    return {"kind": kind}


def _outputs(label: str, kinds: tuple[str, ...]) -> dict | None:
    """A quantising chain's consumers read Q (the `_y` variant writes the row too); a RoPE chain without
    quantisation always writes its row; other chains keep the default."""
    if "quant_fp8" in kinds or "rope" in kinds:
        return {"y": label.endswith("_y") or "quant_fp8" not in kinds}
    return None


def generate(seed: int) -> dict[str, dict]:
    """The sweep's specs by file stem, as TOML-ready data."""
    rng = random.Random(seed)
    specs = {}
    turn = 0
    for hidden in WIDTHS:
        for _ in range(SPECS_PER_WIDTH):
            label, kinds = CHAINS[turn % len(CHAINS)]
            # Offset by each round of chains, so that a chain does not keep the same dtype.
            dtype = DTYPES[(turn + turn // len(CHAINS)) % len(DTYPES)]
            turn += 1
            ops = [_op(kind, label, hidden, rng) for kind in kinds]
            name = f"sweep_{label}_{dtype.replace('float', 'f')}_{hidden}"
            spec = {"name": name, "dtype": dtype, "hidden": hidden, "op": ops}
            if label == "qk_norm_rope":
                head_dim = rng.choice([d for d in HEAD_DIMS if hidden % d == 0 and d >= ops[1]["rope_dim"]])
                spec = {"name": name, "dtype": dtype, "hidden": hidden, "head_dim": head_dim, "op": ops}
            if outputs := _outputs(label, kinds):
                spec["outputs"] = outputs
            specs[name] = spec
    for name, spec in ISSUE_SHAPES.items():
        specs[name] = {"name": name, **spec}
    models = random.Random(f"{seed}-model-chains")
    for turn, (label, kinds, hidden, head_dim) in enumerate(MODEL_CHAINS):
        dtype = DTYPES[turn % len(DTYPES)]
        name = f"sweep_{label}_{dtype.replace('float', 'f')}_{hidden}"
        spec = {"name": name, "dtype": dtype, "hidden": hidden} | ({"head_dim": head_dim} if head_dim else {})
        spec["op"] = [_op(kind, label, hidden, models) for kind in kinds]
        if outputs := _outputs(label, kinds):
            spec["outputs"] = outputs
        specs[name] = spec
    _check_coverage(specs)
    return specs


def _check_coverage(specs: dict[str, dict]) -> None:
    """Every axis value of the module docstring appears in the sweep; raises naming the missing ones."""
    seen: dict[str, set] = {"hidden": set(), "dtype": set(), "kind": set(), "y": set()}
    for key in ("group_size", "style", "span", "source", "scale_layout", "fp8", "scale", "over"):
        seen[key] = set()
    for spec in specs.values():
        seen["hidden"].add(spec["hidden"])
        seen["dtype"].add(spec["dtype"])
        seen["y"].add(spec.get("outputs", {}).get("y", True))
        for op in spec["op"]:
            seen["kind"].add(op["kind"])
            for key in seen:
                if key in op and key != "kind":
                    seen[key].add(op[key])
    wanted = {
        "hidden": set(WIDTHS),
        "dtype": set(DTYPES),
        "kind": {"rmsnorm", "layernorm", "rope", "quant_fp8", "add_residual", "rescale"},
        "y": {True, False},
        "group_size": set(GROUPS),
        "style": {"neox", "gptj"},
        "span": {"head", "tail"},
        "source": {"cache"},
        "scale_layout": {"column"},
        "fp8": {"e5m2"},
        "scale": {"ue8m0"},
        "over": {"head"},
    }
    missing = {key: sorted(map(str, values - seen[key])) for key, values in wanted.items() if values - seen[key]}
    if missing:
        raise SystemExit(f"the sweep misses axis values {missing}; change the seed or the chain rotation")


HEADER = "# generated by scripts/sweep_specs.py"


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)


def to_toml(spec: dict, seed: int) -> str:
    lines = [f"{HEADER} --seed {seed}: issue 16's sweep, run untuned by scripts/gpu_sweep.sh"]
    lines += [f"{key} = {_toml_value(spec[key])}" for key in ("name", "dtype", "hidden", "head_dim") if key in spec]
    for op in spec["op"]:
        lines += ["", "[[op]]"] + [f"{key} = {_toml_value(value)}" for key, value in op.items()]
    if "outputs" in spec:
        lines += ["", "[outputs]"] + [f"{key} = {_toml_value(value)}" for key, value in spec["outputs"].items()]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", nargs="?", default="perf/sweep", help="where the specs go (default: perf/sweep)")
    parser.add_argument("--seed", type=int, default=16, help="the generator's seed (default: 16, the issue's number)")
    args = parser.parse_args(argv)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    specs = generate(args.seed)
    for stale in out.glob("*.toml"):
        if stale.stem not in specs and stale.read_text().startswith(HEADER):
            stale.unlink()
    for name, spec in specs.items():
        (out / f"{name}.toml").write_text(to_toml(spec, args.seed))
    print(f"{len(specs)} specs in {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
