"""Float keys of every op: a value the float32 arithmetic of an all-zero row cannot carry (0, subnormal or
beyond float32, nan, inf) is a spec error stating the usable range, and the smallest accepted value gives
finite outputs for such a row (CPU)."""

from __future__ import annotations

import math

import pytest
import torch

from fusegen.checking import build_variant
from fusegen.errors import SpecError
from fusegen.ops import FLOAT32_MIN_NORMAL, REGISTRY
from fusegen.ops.quant_fp8 import AMAX_FLOOR_MAX, AMAX_FLOOR_MIN
from fusegen.ops.rescale import FACTOR_MAX
from fusegen.ops.rmsnorm import WEIGHT_OFFSET_MAX
from fusegen.spec import KernelSpec, parse_spec

HEAD = 'name = "floats"\ndtype = "float32"\nhidden = 256\n'
FLOAT_KEYS = [
    pytest.param(kind, key, id=f"{kind}.{key}")
    for kind, op in REGISTRY.items()
    for key, field in op.spec.model_fields.items()
    if field.annotation is float
]
# TOML spellings: not a number, infinite, zero, zero or subnormal once rounded to float32, beyond float32.
UNUSABLE = ["nan", "inf", "-inf", "0.0", "-0.0", "1e-50", repr(2.0**-127), "1e39"]
ZEROS = ("0.0", "-0.0")
# Keys whose zero is an ordinary value (the default: no offset); an all-zero row never meets it alone.
ZERO_ALLOWED = {("rmsnorm", "weight_offset")}


def spec_text(kind: str, assignments: str = "") -> str:
    return f'{HEAD}\n[[op]]\nkind = "{kind}"\n{assignments}\n'


def test_every_op_with_a_float_key_is_covered():
    assert {p.values[:2] for p in FLOAT_KEYS} == {
        ("rmsnorm", "eps"),
        ("rmsnorm", "weight_offset"),
        ("layernorm", "eps"),
        ("quant_fp8", "amax_floor"),
        ("rescale", "factor"),
    }


@pytest.mark.parametrize("kind, key", FLOAT_KEYS)
@pytest.mark.parametrize("value", UNUSABLE)
def test_unusable_float_is_refused_with_the_range(kind, key, value):
    if (kind, key) in ZERO_ALLOWED and value in ZEROS:
        assert getattr(parse_spec(spec_text(kind, f"{key} = {value}"), "floats.toml").op[0], key) == 0.0
        return
    with pytest.raises(SpecError) as caught:
        parse_spec(spec_text(kind, f"{key} = {value}"), "floats.toml")
    assert caught.value.key == f"op[0].{key}"
    assert "must be a number from" in caught.value.message or "expected a number from" in caught.value.message


BOUNDS = [
    *(pytest.param(kind, "eps", "", FLOAT32_MIN_NORMAL, 1.0, id=f"{kind}.eps") for kind in ("rmsnorm", "layernorm")),
    *(
        pytest.param("quant_fp8", "amax_floor", f'fp8 = "{fp8}"', low, AMAX_FLOOR_MAX, id=f"amax_floor.{fp8}")
        for fp8, low in AMAX_FLOOR_MIN.items()
    ),
    # The positive half; the negative one mirrors it (the range is symmetric).
    pytest.param("rmsnorm", "weight_offset", "", FLOAT32_MIN_NORMAL, WEIGHT_OFFSET_MAX, id="weight_offset"),
    pytest.param("rescale", "factor", "", FLOAT32_MIN_NORMAL, FACTOR_MAX, id="factor"),
]


@pytest.mark.parametrize("kind, key, other, low, high", BOUNDS)
def test_bounds_are_inclusive_and_tight(kind, key, other, low, high):
    def parse(value: float):
        return parse_spec(spec_text(kind, f"{other}\n{key} = {value!r}"), "floats.toml")

    assert getattr(parse(low).op[0], key) == low
    assert getattr(parse(high).op[0], key) == high
    for outside in (math.nextafter(low, 0.0), math.nextafter(high, math.inf)):
        with pytest.raises(SpecError, match=f"{low!r}"):
            parse(outside)


ZERO_ROW_CHAINS = [
    pytest.param({"op": [{"kind": "rmsnorm", "eps": FLOAT32_MIN_NORMAL}], "outputs": {"rstd": True}}, id="rmsnorm"),
    pytest.param(
        {"op": [{"kind": "layernorm", "eps": FLOAT32_MIN_NORMAL, "bias": False}], "outputs": {"mean": True, "rstd": True}}, id="layernorm"
    ),
    *(
        pytest.param(
            {"op": [{"kind": "quant_fp8", "group_size": 32, "fp8": fp8, "scale": scale, "amax_floor": low}]}, id=f"quant_{fp8}_{scale}"
        )
        for fp8, low in AMAX_FLOOR_MIN.items()
        for scale in ("fp32", "ue8m0")
    ),
]


@pytest.mark.parametrize("chain", ZERO_ROW_CHAINS)
def test_zero_row_at_the_smallest_accepted_value_is_finite(chain, tmp_path):
    spec = KernelSpec.model_validate({"name": "zero_row", "dtype": "float32", "hidden": 256, **chain})
    module = build_variant(spec, tmp_path)
    inputs = [torch.zeros(3, 256)] + [torch.ones(256) for _ in module.INPUTS[1:]]
    outputs = module.reference(*inputs)._asdict()
    for name, value in outputs.items():
        assert torch.isfinite(value.float()).all(), f"{name} is not finite for an all-zero row"
    for name in ("y", "q"):
        if name in outputs:
            assert (outputs[name].float() == 0).all()
