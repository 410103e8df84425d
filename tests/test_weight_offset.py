"""rmsnorm weight_offset: y = x·rstd·(weight_offset + w) (Gemma: 1.0), added in float32 once where the
weight is staged, and a key that leaves every spec not using it as it was."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from fusegen import checking, oracle
from fusegen.plan import plan
from fusegen.spec import KernelSpec
from fusegen.tuning import problem_key


def spec(rmsnorm: dict, dtype="float32", hidden=512, **extra) -> KernelSpec:
    return KernelSpec.model_validate({"name": "offset", "dtype": dtype, "hidden": hidden, "op": [{"kind": "rmsnorm", **rmsnorm}], **extra})


def test_an_offset_is_the_same_as_a_shifted_weight(tmp_path):
    """In float32 the shift is exact for weights near 0, so both kernels' references agree bit for bit."""
    generator = torch.Generator().manual_seed(int.from_bytes(os.urandom(4), "little"))
    gemma = checking.build_variant(spec({"weight_offset": 1.0}), tmp_path / "gemma")
    plain = checking.build_variant(spec({}), tmp_path / "plain")
    x, w = checking.random_inputs(gemma, 9, generator, device="cpu")
    assert w.abs().mean() < 0.5, "Gemma-like weights are drawn near 0"
    torch.testing.assert_close(gemma.reference(x, w).y, plain.reference(x, w + 1.0).y, rtol=0, atol=0)


def test_the_oracle_applies_the_offset():
    x, w = torch.randn(4, 64), torch.randn(64) * 0.1
    base = {"dtype": "float32", "hidden": 64, "outputs": {}}
    shifted = oracle.run_chain(
        {**base, "op": [{"kind": "rmsnorm", "eps": 1e-6, "weight": True, "weight_offset": 2.0}]}, {"x": x, "weight": w}
    )
    plain = oracle.run_chain({**base, "op": [{"kind": "rmsnorm", "eps": 1e-6, "weight": True}]}, {"x": x, "weight": w.double() + 2.0})
    torch.testing.assert_close(shifted["y"], plain["y"])


def body_of(tmp_path, kernel: KernelSpec) -> str:
    checking.build_variant(kernel, tmp_path)
    return (Path(tmp_path) / kernel.name / "kernel.py").read_text().split("@T.prim_func", 1)[1]


def test_a_streamed_weight_gets_its_offset_once_per_block_in_float32(tmp_path):
    body = body_of(tmp_path, spec({"weight_offset": 1.0}, "bfloat16", 2048, schedule={"variant": "stream"}))
    before_loop, loop = body.split("for step in T.serial", 1)
    assert 'weight_staged = T.alloc_fragment((HIDDEN,), "float32")' in before_loop
    assert 'weight_staged[j] = (T.cast(Weight[j], "float32") + 1.0)' in before_loop
    assert "+ 1.0" not in loop and "rstd[0] * weight_staged[j]" in loop


def test_a_weight_read_in_place_gets_its_offset_where_it_is_read(tmp_path):
    body = body_of(tmp_path, spec({"weight_offset": -0.5}, "float16", 1024, schedule={"prefetch": False}))
    assert "weight_staged" not in body
    assert 'rstd[0] * (T.cast(Weight[j], "float32") + -0.5)' in body


@pytest.mark.parametrize(
    "kind, key, default, other", [("rmsnorm", "weight_offset", 0.0, 1.0), ("quant_fp8", "scale_layout", "row", "column")]
)
def test_an_added_key_at_its_default_leaves_identity_and_tuning_key_as_they_were(kind, key, default, other):
    """Specs written before the key existed keep their generated files and their tuned winners."""

    def with_op(**op):
        return KernelSpec.model_validate({"name": "added", "dtype": "float16", "hidden": 512, "op": [{"kind": kind, **op}]})

    unset, explicit, used = with_op(), with_op(**{key: default}), with_op(**{key: other})
    assert plan(unset, "x").identity == plan(explicit, "x").identity != plan(used, "x").identity
    assert problem_key(unset) == problem_key(explicit) != problem_key(used)
    assert key not in unset.model_dump(mode="json")["op"][0]
    assert used.model_dump(mode="json")["op"][0][key] == other
