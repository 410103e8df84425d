"""Each generated torch reference against the independent float64 formulation in oracle.py (CPU).
Inputs are fresh each run; the seed is printed, and pytest shows it with any failure."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import pytest
import torch

from fusegen import oracle
from fusegen.checking import build_variant, random_inputs
from fusegen.ops.quant_fp8 import FP32_NOISE, TIE_WINDOW
from fusegen.spec import KernelSpec

GENERATED = Path(__file__).resolve().parent.parent / "generated"
EXAMPLE_SPECS = [json.loads(p.read_text())["spec"] for p in sorted(GENERATED.glob("*/plan.json"))]
# Options the examples do not reach: gptj and head spans, RoPE from a cos_sin_cache, ue8m0 and e5m2, layernorm into quant, no weight/bias.
EXTRA_SPECS = [
    {
        "name": "gptj_head",
        "dtype": "bfloat16",
        "hidden": 512,
        "op": [{"kind": "rmsnorm", "weight": False}, {"kind": "rope", "rope_dim": 128, "span": "head", "style": "gptj"}],
    },
    {
        "name": "ln_group",
        "dtype": "float32",
        "hidden": 768,
        "op": [{"kind": "layernorm", "bias": False}, {"kind": "quant_fp8", "group_size": 64, "fp8": "e5m2", "scale": "ue8m0"}],
        "outputs": {"mean": True, "rstd": True},
    },
    {
        "name": "rope_quant",
        "dtype": "float16",
        "hidden": 256,
        "op": [{"kind": "rope", "rope_dim": 32}, {"kind": "quant_fp8", "group_size": 128}],
    },
    {"name": "quant_only", "dtype": "bfloat16", "hidden": 1024, "op": [{"kind": "quant_fp8", "group_size": 32}]},
    {"name": "rms_rstd", "dtype": "float16", "hidden": 1000, "op": [{"kind": "rmsnorm", "eps": 1e-2}], "outputs": {"rstd": True}},
    {
        "name": "gemma_offset",
        "dtype": "bfloat16",
        "hidden": 640,
        "op": [{"kind": "rmsnorm", "weight_offset": 1.0}, {"kind": "quant_fp8", "group_size": 128, "scale_layout": "column"}],
    },
    {
        "name": "add_rms_quant",
        "dtype": "bfloat16",
        "hidden": 512,
        "op": [{"kind": "add_residual"}, {"kind": "rmsnorm", "eps": 1e-5}, {"kind": "quant_fp8", "group_size": "token"}],
        "outputs": {"y": False},
    },
    {
        "name": "add_ln",
        "dtype": "float16",
        "hidden": 1000,
        "op": [{"kind": "add_residual"}, {"kind": "layernorm"}],
        "outputs": {"rstd": True},
    },
    {
        "name": "add_rms_no_stream",
        "dtype": "float32",
        "hidden": 256,
        "op": [{"kind": "add_residual"}, {"kind": "rmsnorm"}],
        "outputs": {"residual": False},
    },
    {
        "name": "rope_cache_gptj_quant",
        "dtype": "bfloat16",
        "hidden": 512,
        "op": [
            {"kind": "rmsnorm"},
            {"kind": "rope", "rope_dim": 64, "style": "gptj", "source": "cache", "max_position": 4096},
            {"kind": "quant_fp8", "group_size": 128},
        ],
    },
]
# Heads and column ranges: per-head norms with whole-head and partial RoPE, a norm over a column range
# beside a RoPE outside it (DeepSeek MLA's kv_a), per-head RoPE alone (its q_b).
EXTRA_SPECS += [
    {
        "name": "qk_norm_cache",
        "dtype": "bfloat16",
        "hidden": 512,
        "head_dim": 128,
        "op": [
            {"kind": "rmsnorm", "over": "head", "weight_offset": 1.0},
            {"kind": "rope", "rope_dim": 128, "source": "cache", "max_position": 64},
        ],
        "outputs": {"rstd": True},
    },
    {
        "name": "ln_head_partial_gptj_group",
        "dtype": "float16",
        "hidden": 640,
        "head_dim": 64,
        "op": [
            {"kind": "layernorm", "over": "head"},
            {"kind": "rope", "rope_dim": 32, "style": "gptj", "span": "head"},
            {"kind": "quant_fp8", "group_size": 64},
        ],
        "outputs": {"mean": True, "rstd": True},
    },
    {
        "name": "mla_kv_a",
        "dtype": "bfloat16",
        "hidden": 576,
        "op": [
            {"kind": "rmsnorm", "columns": [0, 512]},
            {"kind": "rope", "rope_dim": 64, "style": "gptj", "source": "cache", "max_position": 100},
        ],
        "outputs": {"rstd": True},
    },
    {
        "name": "ln_columns_quant",
        "dtype": "float32",
        "hidden": 1024,
        "op": [{"kind": "layernorm", "columns": [256, 1000]}, {"kind": "quant_fp8", "group_size": "token"}],
        "outputs": {"mean": True},
    },
    {
        "name": "mla_q_b_rope",
        "dtype": "bfloat16",
        "hidden": 576,
        "head_dim": 192,
        "op": [{"kind": "rope", "rope_dim": 64, "style": "gptj"}],
    },
]
# A rescale after the norm, before or after RoPE: the softmax scale folded into q after QK-norm and RoPE,
# LayerScale's weight alone (factor 1) before RoPE, and a large factor (Gemma's √hidden) into fp8.
EXTRA_SPECS += [
    {
        "name": "qk_norm_rope_softmax_scale",
        "dtype": "bfloat16",
        "hidden": 512,
        "head_dim": 128,
        "op": [
            {"kind": "rmsnorm", "over": "head"},
            {"kind": "rope", "rope_dim": 128},
            {"kind": "rescale", "factor": 128**-0.5},
        ],
    },
    {
        "name": "ln_layerscale_rope",
        "dtype": "float16",
        "hidden": 1000,
        "op": [{"kind": "layernorm"}, {"kind": "rescale", "weight": True}, {"kind": "rope", "rope_dim": 64, "style": "gptj"}],
        "outputs": {"rstd": True},
    },
    {
        "name": "rms_sqrt_hidden_quant",
        "dtype": "bfloat16",
        "hidden": 640,
        "op": [
            {"kind": "rmsnorm", "weight": False},
            {"kind": "rescale", "factor": 640**0.5, "weight": True},
            {"kind": "quant_fp8", "group_size": 128, "scale": "ue8m0"},
        ],
    },
]
CASES = [pytest.param(s, id=s["name"]) for s in EXAMPLE_SPECS + EXTRA_SPECS]
# The reference rounds y once to its dtype; the oracle does not round at all.
Y_TOLERANCE = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 1e-5}
ROW_CHANGING_OPS = ("add_residual", "rmsnorm", "layernorm", "rescale", "rope")


def fresh_seed() -> int:
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"seed {seed}")
    return seed


def outputs_asked_for(spec: dict, tokens: int) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    """(shape, dtype) of each output, read from the spec as the README's Spec reference states it."""
    hidden = spec["hidden"]
    flags = spec.get("outputs", {})
    writes_y = flags.get("y")
    if writes_y is None:  # the default: Y whenever an op changes the row
        writes_y = any(op["kind"] in ROW_CHANGING_OPS for op in spec["op"])
    asked = {"y": ((tokens, hidden), getattr(torch, spec["dtype"]))} if writes_y else {}
    per_norm = next((op for op in spec["op"] if op["kind"] in ("rmsnorm", "layernorm")), {})
    stat_shape = (tokens, hidden // spec["head_dim"]) if per_norm.get("over") == "head" else (tokens,)
    asked |= {stat: (stat_shape, torch.float32) for stat in ("mean", "rstd") if flags.get(stat)}
    if any(op["kind"] == "add_residual" for op in spec["op"]) and flags.get("residual") is not False:
        asked["residual_out"] = ((tokens, hidden), getattr(torch, spec["dtype"]))
    for op in (op for op in spec["op"] if op["kind"] == "quant_fp8"):
        group = hidden if op["group_size"] == "token" else op["group_size"]
        fp8 = torch.float8_e5m2 if op.get("fp8") == "e5m2" else torch.float8_e4m3fn
        asked |= {"q": ((tokens, hidden), fp8), "scale": ((tokens, hidden // group), torch.float32)}
    return asked


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("references")


@pytest.mark.parametrize("spec", CASES)
def test_reference_matches_float64_oracle(spec, scratch):
    assert_reference_matches_oracle(spec, scratch)


def assert_reference_matches_oracle(spec: dict, scratch: Path) -> None:
    """The spec's generated reference against the oracle at 7 tokens of fresh inputs (every input drawn,
    a cos_sin_cache whole: keep max_position · rope_dim modest)."""
    module = build_variant(KernelSpec.model_validate(spec), scratch)
    generator = torch.Generator().manual_seed(fresh_seed())
    tokens = 7
    inputs = random_inputs(module, tokens, generator, device="cpu")
    named = dict(zip((s.name for s in module.INPUTS), inputs))
    got = module.reference(*inputs)._asdict()
    want = oracle.run_chain(KernelSpec.model_validate(spec).model_dump(mode="json"), named)
    assert {name: (tuple(t.shape), t.dtype) for name, t in got.items()} == outputs_asked_for(spec, tokens)
    if "y" in got:
        rel = Y_TOLERANCE[spec["dtype"]]
        torch.testing.assert_close(got["y"].double(), want["y"], rtol=rel, atol=rel)
    if "residual_out" in got:
        # One rounding of a sum float64 holds exactly: the reference's float32 sum rounds to the same value.
        assert torch.equal(got["residual_out"], want["residual_out"])
    for stat in ("mean", "rstd"):
        if stat in got:
            torch.testing.assert_close(got[stat].double(), want[stat], rtol=1e-5, atol=1e-6)
    if "q" in got:
        torch.testing.assert_close(got["scale"].double(), want["scale"], rtol=1e-5, atol=0)
        unrounded = want["q_unrounded"]
        # The fp8 code must be the nearest one to the exact quotient, except at a rounding tie: bf16 inputs
        # make exact midpoints common (s·w / amax needs few bits), and there fp32 and fp64 may round apart.
        expected = unrounded.to(got["q"].dtype)
        differs = got["q"].view(torch.uint8) != expected.view(torch.uint8)
        midpoint = (got["q"].double() + expected.double())[differs] / 2
        # fp32's error is relative to the largest operands (after RoPE, the group's range: fp8_max in
        # scaled units), so a value far below its group's max can cross a midpoint by more than its own
        # relative window (0.0977 in a group reaching 448, 6.4999 in one reaching 36268: random seeds).
        group_noise = torch.finfo(got["q"].dtype).max * FP32_NOISE
        off_midpoint = (unrounded[differs] - midpoint).abs() > TIE_WINDOW * midpoint.abs() + group_noise
        assert not off_midpoint.any(), f"fp8 codes not the nearest to v / scale at {unrounded[differs][off_midpoint].tolist()}"
        # Rounding to nearest is off by at most half a step: relative 2^-4 (e4m3) or 2^-3 (e5m2) for normal
        # values, half the subnormal spacing below them. A code the check above let round to the far side of
        # a midpoint within the group's noise may be off by that noise too (a LayerNorm → GPT-J cache RoPE →
        # e5m2 value that cancelled to −0.0719: the reference's fp32 put it under the midpoint −0.0703, −0.0625).
        e4m3 = got["q"].dtype == torch.float8_e4m3fn
        half_step, half_subnormal = (2.0**-4, 2.0**-10) if e4m3 else (2.0**-3, 2.0**-17)
        error = (got["q"].double() - unrounded).abs()
        assert (error <= half_step * unrounded.abs() + half_subnormal + group_noise * differs).all()


def test_oracle_covers_every_registered_op():
    from fusegen.ops import REGISTRY

    kinds = {op["kind"] for s in EXAMPLE_SPECS + EXTRA_SPECS for op in s["op"]}
    assert kinds == set(REGISTRY)


@pytest.mark.parametrize("scale_kind", ["fp32", "ue8m0"])
def test_quant_scale_is_the_exact_quotient(scale_kind, scratch):
    """Pins the rule the H200 run found: the reference's scale is the IEEE quotient amax / fp8_max (torch
    divides by a Python float through a rounded reciprocal), and ue8m0 is the exact power-of-two ceiling
    (log2 differs in the last ulp between CUDA and torch near powers of two)."""
    spec = {
        "name": f"scale_{scale_kind}",
        "dtype": "float32",
        "hidden": 256,
        "op": [{"kind": "quant_fp8", "group_size": 32, "scale": scale_kind}],
    }
    module = build_variant(KernelSpec.model_validate(spec), scratch)
    # Clamped below the values planted next, so that each planted value is its group's maximum.
    x = torch.randn(6, 256, generator=torch.Generator().manual_seed(fresh_seed())).clamp(-3.0, 3.0)
    # Group maxima on and one ulp beside a power of two times 448, where both rules bite.
    x[0, 0] = 448.0 * 2.0**-7
    x[1, 0] = torch.nextafter(torch.tensor(448.0 * 2.0**-7), torch.tensor(1.0)).item()
    x[2, 0] = 3.0625
    scale = module.reference(x).scale
    amax = x.abs().view(6, 8, 32).amax(dim=-1)
    expected = (amax.double() / 448.0).float()  # binary64 then binary32: correctly rounded for a quotient
    if scale_kind == "ue8m0":

        def ceil_pow2(s):
            return s if math.frexp(s)[0] == 0.5 else 2.0 ** math.frexp(s)[1]

        expected = torch.tensor([[ceil_pow2(s) for s in row] for row in expected.tolist()], dtype=torch.float32)
    assert torch.equal(scale, expected)
    # On the CPU torch divides by a Python float exactly; on CUDA it multiplies by the rounded
    # reciprocal. Only the text can show the GPU-only hazard here.
    reference_text = (Path(module.__file__).parent / "reference.py").read_text()
    assert not re.search(r"/ *-?[0-9]", reference_text), "the reference divides by a number literal"
