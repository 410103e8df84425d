"""Numeric edge cases on the GPU, against the reference (README: "Errors and edge cases")."""

from __future__ import annotations

import importlib
import math
import subprocess
from pathlib import Path

import pytest
import torch
from cases import RMS, quant, rope

from fusegen import checking, testing
from fusegen.spec import KernelSpec

FUSED = "generated.rms_norm_rope_quant_fused"


def fused_inputs(module, tokens, generator):
    return checking.random_inputs(module, tokens, generator)


def run(module, inputs):
    outputs = checking.poisoned_outputs(module, inputs[0].shape[0])
    module.kernel(*inputs, out=module.Outputs(*outputs))
    torch.cuda.synchronize()
    return module.Outputs(*outputs), module.reference(*inputs)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("edge")


def variant(spec, scratch):
    return checking.build_variant(KernelSpec.model_validate(spec), scratch)


@testing.requires_gpu
@pytest.mark.parametrize("group", ["token", 128])
def test_all_zero_rows_give_floor_scale_and_zero_codes(group, scratch):
    module = variant({"name": f"zeros_{group}", "dtype": "bfloat16", "hidden": 2048, "op": [RMS, rope(64), quant(group)]}, scratch)
    inputs = fused_inputs(module, 16, torch.Generator().manual_seed(1))
    inputs[0][3].zero_()
    inputs[0][9].zero_()
    got, want = run(module, inputs)
    checking.compare(module, list(got), list(want), "bfloat16")
    for row in (3, 9):
        assert torch.all(got.scale[row] == torch.tensor(1e-10, dtype=torch.float32) / 448.0)
        assert torch.all(got.q[row].float() == 0)
        assert torch.all(got.y[row].float() == 0)


@testing.requires_gpu
@pytest.mark.parametrize("fp8, fp8_max", [("e4m3fn", 448.0), ("e5m2", 57344.0)])
def test_each_group_max_saturates_at_fp8_max_not_nan(fp8, fp8_max, scratch):
    """amax / scale lands on fp8_max up to fp32 rounding; a value a hair above must clamp, not turn NaN."""
    module = variant({"name": f"sat_{fp8}", "dtype": "float16", "hidden": 1024, "op": [RMS, quant(128, fp8=fp8)]}, scratch)
    inputs = fused_inputs(module, 64, torch.Generator().manual_seed(2))
    inputs[0] *= 300.0  # large inputs: normalisation brings them back, the scale does the rest
    got, want = run(module, inputs)
    checking.compare(module, list(got), list(want), "float16")
    peaks = got.q.float().abs().view(64, 8, 128).amax(dim=-1)
    assert torch.all(peaks == fp8_max)


@testing.requires_gpu
def test_non_finite_rows_stay_in_their_row():
    """Policy: a row holding NaN or Inf gets unspecified values in its own outputs; no other row changes
    and nothing faults."""
    module = importlib.import_module(FUSED)
    inputs = fused_inputs(module, 32, torch.Generator().manual_seed(3))
    inputs[0][5, 17] = float("nan")
    inputs[0][11, 4000] = float("inf")
    inputs[0][20, 0] = -float("inf")
    got, want = run(module, inputs)
    finite = [r for r in range(32) if r not in (5, 11, 20)]
    checking.compare(module, [o[finite] for o in got], [o[finite] for o in want], "float16")


@testing.requires_gpu
@pytest.mark.parametrize("dtype, tiny", [("float16", 2.0**-20), ("bfloat16", 1e-39), ("float32", 1e-40)])
def test_subnormal_inputs(dtype, tiny, scratch):
    module = variant({"name": f"subnormal_{dtype}", "dtype": dtype, "hidden": 1024, "op": [RMS, rope(64), quant(128)]}, scratch)
    inputs = fused_inputs(module, 8, torch.Generator().manual_seed(4))
    inputs[0][2] = (torch.randn(1024, device="cuda") * tiny).to(inputs[0].dtype)
    got, want = run(module, inputs)
    checking.compare(module, list(got), list(want), dtype)


@testing.requires_gpu
@pytest.mark.parametrize("eps", [1e-12, 1.0])
@pytest.mark.parametrize("norm", ["rmsnorm", "layernorm"])
def test_tiny_and_large_eps(norm, eps, scratch):
    module = variant(
        {
            "name": f"eps_{norm}_{int(-math.log10(eps)) if eps < 1 else 0}",
            "dtype": "bfloat16",
            "hidden": 2048,
            "op": [{"kind": norm, "eps": eps}, quant(64)],
            "outputs": {"rstd": True},
        },
        scratch,
    )
    inputs = fused_inputs(module, 40, torch.Generator().manual_seed(5))
    got, want = run(module, inputs)
    checking.compare(module, list(got), list(want), "bfloat16")


@testing.requires_gpu
def test_zero_tokens_return_empty_outputs():
    module = importlib.import_module(FUSED)
    inputs = fused_inputs(module, 0, torch.Generator().manual_seed(6))
    got = module.kernel(*inputs)
    assert [tuple(o.shape) for o in got] == [(0, 4096), (0, 4096), (0, 1)]


@testing.requires_gpu
def test_misaligned_cuda_view_is_rejected():
    module = importlib.import_module(FUSED)
    inputs = fused_inputs(module, 4, torch.Generator().manual_seed(7))
    flat = torch.empty(4 * 4096 + 1, dtype=torch.float16, device="cuda")
    inputs[0] = flat[1:].view(4, 4096)
    with pytest.raises(ValueError, match="16-byte boundary"):
        module.kernel(*inputs)


@testing.requires_gpu
def test_the_written_out_reciprocal_is_frcp_rn_on_every_scale(tmp_path):
    """quant_fp8._reciprocal's MUFU.RCP and Newton step against __frcp_rn on every float32 an fp32 scale can be
    (tests/rcp_exhaustive.cu: about two billion values, under a second)."""
    binary = tmp_path / "rcp_exhaustive"
    source = Path(__file__).resolve().parent / "rcp_exhaustive.cu"
    subprocess.run(["nvcc", "-O3", "-arch=sm_90a", "-o", str(binary), str(source)], check=True)
    done = subprocess.run([str(binary)], capture_output=True, text=True)
    every_scale = 2 * 252 * 2**23  # both signs, exponent fields 1 … 252, every significand
    assert done.returncode == 0 and done.stdout.startswith(f"checked {every_scale} float32 values") and ": 0 differ" in done.stdout, (
        done.stdout
    )
