"""The residual add before the norm: its outputs and their default, the kernel's argument order, the
ledger, and the in-place update (residual_out = the residual input) that servers use."""

from __future__ import annotations

import logging

import pytest
import torch
from cases import spec_for

from fusegen import checking, testing
from fusegen.plan import plan
from fusegen.runtime import KernelArgumentError
from fusegen.spec import KernelSpec

HIDDEN = 256


def spec(outputs=None, ops=({"kind": "rmsnorm"},), dtype="bfloat16") -> KernelSpec:
    data = {"name": "add_norm", "dtype": dtype, "hidden": HIDDEN, "op": [{"kind": "add_residual"}, *ops]}
    if outputs is not None:
        data["outputs"] = outputs
    return KernelSpec.model_validate(data)


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    logging.getLogger("tilelang").setLevel(logging.WARNING)
    return checking.build_variant(spec(), tmp_path_factory.mktemp("add_residual"))


def test_residual_out_leaves_unless_turned_off():
    assert [t.arg for t in plan(spec(), "s").outputs] == ["y", "residual_out"]
    assert [t.arg for t in plan(spec({"residual": False}), "s").outputs] == ["y"]
    assert [t.arg for t in plan(spec({"residual": False, "y": False, "rstd": True}), "s").outputs] == ["rstd"]


def test_arguments_follow_the_contracts_order():
    chain = ({"kind": "layernorm"}, {"kind": "rope", "rope_dim": 32}, {"kind": "quant_fp8", "group_size": "token"})
    planned = plan(spec({"mean": True, "rstd": True}, chain), "s")
    assert [t.arg for t in planned.inputs] == ["x", "residual", "weight", "bias", "cos", "sin"]
    assert [t.arg for t in planned.outputs] == ["y", "residual_out", "mean", "rstd", "q", "scale"]


def test_ledger_counts_the_residual_once_each_way():
    row = HIDDEN * 2
    for outputs, written in ((None, "residual_out"), ({"residual": False}, "add_residual output")):
        ledger = plan(spec(outputs), "s").ledger
        fused = {(line.tensor, line.direction): line.bytes_per_token for line in ledger.fused}
        assert fused[("residual", "read")] == row
        assert (("residual_out", "write") in fused) == (outputs is None)
        # Unfused: an add kernel reads x and residual and writes the sum once; the norm reads that sum.
        add = [(line.tensor, line.direction, line.bytes_per_token) for line in ledger.unfused if line.kernel == "add_residual alone"]
        assert add == [("x", "read", row), ("residual", "read", row), (written, "write", row)]
        norm_reads = [line.tensor for line in ledger.unfused if line.kernel == "rmsnorm alone" and line.direction == "read"]
        assert norm_reads[0] == written


def meta_tensors(module, tokens: int):
    def empty(spec):
        return torch.empty(tuple(tokens if d == "m" else d for d in spec.shape), dtype=spec.dtype, device="meta")

    return [empty(s) for s in module.INPUTS], [empty(s) for s in module.OUTPUTS]


def test_the_out_variant_takes_the_residual_input_as_residual_out(module):
    """The .out op declares its outputs mutated (Tensor(a!)); an input aliasing one is legal for it. On
    meta tensors the dispatcher runs the op's checks (the fake), so this is the call a server makes,
    checked, without a GPU; an output of the wrong shape in the same place is refused there."""
    inputs, outputs = meta_tensors(module, 5)
    names = [s.name for s in module.OUTPUTS]
    outputs[names.index("residual_out")] = inputs[1]
    assert module.launcher.op_out(*inputs, *outputs) is None
    outputs[names.index("residual_out")] = inputs[1][:, :-1]
    with pytest.raises(KernelArgumentError, match="output 'residual_out' must have shape"):
        module.launcher.op_out(*inputs, *outputs)


def test_every_check_but_the_device_passes_an_aliased_residual(module, monkeypatch):
    """On CPU tensors a call stops at "must be on a CUDA device"; every check before it (type, shape,
    contiguity, alignment) and the device check's own rule (one device) accept the aliased tensor."""
    inputs = [torch.randn(tuple(5 if d == "m" else d for d in s.shape)).to(s.dtype) for s in module.INPUTS]
    out = module.Outputs(torch.empty_like(inputs[0]), inputs[1])
    with pytest.raises(KernelArgumentError, match="input 'x' must be on a CUDA device"):
        module.kernel(*inputs, out=out)
    monkeypatch.setattr(module.launcher, "_check_device", lambda spec, tensor, device, role: None)
    module.launcher.check(inputs, out)


@testing.requires_gpu
@pytest.mark.parametrize("tokens", (1, 255, 16384))
def test_in_place_update_matches_the_reference(tokens, tmp_path):
    """residual_out = residual on the GPU: every element of the stream is read before it is overwritten,
    so the result is the reference's on the inputs as they were."""
    module = checking.build_variant(KernelSpec.model_validate(spec_for("add_rms_y_fp16")), tmp_path)
    generator = torch.Generator().manual_seed(tokens)
    inputs = checking.random_inputs(module, tokens, generator)
    reference = module.reference(*inputs)
    names = [s.name for s in module.OUTPUTS]
    outputs = checking.poisoned_outputs(module, tokens)
    stream = inputs[[s.name for s in module.INPUTS].index("residual")]
    outputs[names.index("residual_out")] = stream
    module.kernel(*inputs, out=module.Outputs(*outputs))
    torch.cuda.synchronize()
    checking.compare(module, outputs, reference, "float16")
