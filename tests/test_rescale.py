"""The rescale op (y = x · factor · w): where it may run, its input and the ledger's count of it, the
factor as a named constant of the kernel, and the joint reduction across it (CPU; the chains compile and
pass their CUDA checks in test_compile_matrix, from tests/cases.py)."""

from __future__ import annotations

import pytest

from fusegen.emit import render
from fusegen.errors import SpecError
from fusegen.plan import plan
from fusegen.spec import KernelSpec, check_chain, parse_spec

HIDDEN = 256


def spec(*ops: dict, dtype="bfloat16", **top) -> KernelSpec:
    return KernelSpec.model_validate({"name": "rescaled", "dtype": dtype, "hidden": HIDDEN, "op": list(ops), **top})


RMS, ROPE, QUANT = {"kind": "rmsnorm"}, {"kind": "rope", "rope_dim": 32}, {"kind": "quant_fp8", "group_size": "token"}


def rescale(factor=1.0, **kw) -> dict:
    return {"kind": "rescale", "factor": factor, **kw}


@pytest.mark.parametrize(
    "chain",
    [
        [RMS, rescale(0.125), ROPE, QUANT],
        [RMS, ROPE, rescale(0.125), QUANT],
        [{"kind": "add_residual"}, rescale(2.0)],
        [rescale(2.0), QUANT],
    ],
    ids=["before_rope", "after_rope", "after_the_residual_add", "alone_before_quant"],
)
def test_it_runs_anywhere_after_the_norm_and_before_the_quantiser(chain):
    """Ops without a norm are allowed (as a RoPE alone is); only the order is a rule."""
    check_chain(spec(*chain))


def test_a_factor_of_one_without_a_weight_is_refused():
    with pytest.raises(SpecError) as caught:
        parse_spec('name = "r"\ndtype = "bfloat16"\nhidden = 256\n[[op]]\nkind = "rmsnorm"\n[[op]]\nkind = "rescale"\n', "r.toml")
    assert caught.value.key == "op[1].factor" and "leave the row as it is" in caught.value.message


def test_the_weight_is_an_input_in_chain_order_and_nothing_is_an_output():
    layer_scale = plan(spec({"kind": "layernorm"}, rescale(weight=True), ROPE), "s")
    assert [t.arg for t in layer_scale.inputs] == ["x", "weight", "bias", "scale_weight", "cos", "sin"]
    assert [(t.arg, t.dtype, t.shape[0].size) for t in layer_scale.inputs if t.arg == "scale_weight"] == [
        ("scale_weight", "bfloat16", HIDDEN)
    ]
    assert [t.arg for t in layer_scale.outputs] == ["y"]
    assert [t.arg for t in plan(spec(RMS, rescale(0.5)), "s").inputs] == ["x", "weight"]


def test_the_prefetched_weight_is_staged_in_the_rows_layout():
    staged = [b for b in plan(spec(RMS, rescale(0.5, weight=True), schedule={"prefetch": True}), "s").primary.scratch if "staged" in b.name]
    assert [(b.name, b.scope, b.dtype, b.owner) for b in staged] == [
        ("weight_staged", "fragment", "bfloat16", "kernel"),
        ("scaleweight_staged", "fragment", "bfloat16", "kernel"),
    ]


def test_the_ledger_reads_the_weight_once_and_counts_an_unfused_rescale():
    ledger = plan(spec(RMS, rescale(0.5, weight=True)), "s").ledger
    row = HIDDEN * 2
    assert [(line.direction, line.bytes_per_token, line.fixed_bytes) for line in ledger.fused if line.tensor == "scale_weight"] == [
        ("read", 0, row)
    ]
    alone = [
        (line.tensor, line.direction, line.bytes_per_token, line.fixed_bytes) for line in ledger.unfused if line.kernel == "rescale alone"
    ]
    assert alone == [("rmsnorm output", "read", row, 0), ("scale_weight", "read", 0, row), ("rescale output", "write", row, 0)]


def kernel_and_reference(*ops: dict) -> tuple[str, str]:
    files = render(plan(spec(*ops, schedule={"prefetch": True}), "s"))
    return files["kernel.py"], files["reference.py"]


def test_the_factor_is_a_named_constant_of_the_kernel():
    kernel, reference = kernel_and_reference(RMS, rescale(0.125, weight=True))
    assert "\nSCALE_FACTOR = 0.125  # " in kernel
    assert "row[j] = row[j] * SCALE_FACTOR * scaleweight_staged[j]" in kernel
    assert "v = v * 0.125 * scale_weight.float()" in reference


def test_a_factor_of_one_is_left_out():
    kernel, reference = kernel_and_reference(RMS, rescale(weight=True))
    assert "SCALE_FACTOR" not in kernel
    assert "row[j] = row[j] * scaleweight_staged[j]" in kernel
    assert "v = v * scale_weight.float()" in reference


def test_a_joint_reduction_spans_the_rescale():
    """A per-row factor (rstd) commutes with per-column constants, so the norm's sum of squares and the
    per-token amax still cross the warps in one exchange (the stream variant's default)."""
    planned = plan(spec(RMS, rescale(0.125, weight=True), QUANT, hidden=512, schedule={"variant": "stream"}), "s")
    assert planned.schedule.joint_reduction
    assert [b.name for b in planned.primary.scratch if b.barrier and b.name.endswith("_warps")] == ["sumsq_row_amax_warps"]
    # Four rows a block on a warp each fold both in their lanes: nothing to exchange, and the reason says so.
    one_warp_rows = plan(
        spec(
            RMS,
            rescale(0.125, weight=True),
            QUANT,
            hidden=256,
            dtype="float16",
            schedule={"block_m": 4, "threads": 128, "joint_reduction": True},
        ),
        "s",
    )
    assert one_warp_rows.schedule.joint_reduction and one_warp_rows.schedule.threads == 128
    assert not any(b.name.endswith("_warps") for b in one_warp_rows.primary.scratch)
    assert any("amax fold in the row's lanes, no exchange" in r for r in one_warp_rows.schedule.reasons)
