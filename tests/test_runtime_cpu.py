"""A generated kernel's call checks run before any launch, so they are testable without a GPU."""

from __future__ import annotations

import importlib

import pytest
import torch

from fusegen.runtime import KernelArgumentError

fused = importlib.import_module("generated.rms_norm_rope_quant_fused")
M, N, HALF = 4, 4096, 32


def good_args():
    return [
        torch.randn(M, N, dtype=torch.float16),
        torch.randn(N, dtype=torch.float16),
        torch.randn(M, HALF),
        torch.randn(M, HALF),
    ]


def call_with(index, value):
    args = good_args()
    args[index] = value
    with pytest.raises(KernelArgumentError) as caught:
        fused.kernel(*args)
    return str(caught.value)


def test_messages_name_the_kernel_and_argument():
    message = call_with(0, torch.randn(M, N, dtype=torch.bfloat16))
    assert message.startswith("rms_norm_rope_quant_fused: input 'x' must be torch.float16, got torch.bfloat16")


@pytest.mark.parametrize(
    "index, value, expected",
    [
        (0, torch.randn(M, 1024, dtype=torch.float16), "must have shape (4, 4096)"),
        (1, torch.randn(N, dtype=torch.float32), "input 'weight' must be torch.float16"),
        (1, torch.randn(N + 8, dtype=torch.float16), "input 'weight' must have shape (4096,)"),
        (2, torch.randn(M, 64), "input 'cos' must have shape (4, 32)"),
        (3, torch.randn(M + 1, HALF), "input 'sin' must have shape (4, 32)"),
        (2, torch.randn(M, HALF, dtype=torch.float16), "input 'cos' must be torch.float32"),
        (0, torch.randn(N, M, dtype=torch.float16).t(), "input 'x' must be contiguous"),
        (0, torch.randn(M * N + 1, dtype=torch.float16)[1:].view(M, N), "16-byte boundary"),
        (0, "not a tensor", "must be a 2-D tensor"),
    ],
)
def test_bad_arguments_are_rejected_before_launch(index, value, expected):
    assert expected in call_with(index, value)


def test_more_tokens_than_the_int32_token_index_counts_are_rejected():
    """A view of 2³¹ rows (one row, repeated: no memory behind it) would wrap the kernels' `int m`."""
    rows = 2**31
    args = [torch.randn(1, N, dtype=torch.float16).expand(rows, N), good_args()[1], torch.randn(1, HALF).expand(rows, HALF)]
    args.append(args[2])
    with pytest.raises(KernelArgumentError, match=f"counts at most {rows - 1} tokens .*, got {rows}"):
        fused.kernel(*args)


def test_cpu_tensors_are_rejected():
    with pytest.raises(KernelArgumentError, match="input 'x' must be on a CUDA device, got cpu"):
        fused.kernel(*good_args())


def test_wrong_argument_count():
    with pytest.raises(KernelArgumentError, match=r"takes 4 tensors \(x, weight, cos, sin\), got 3"):
        fused.launcher(*good_args()[:3])


def test_non_tensor_inputs_after_the_first_are_named():
    assert "input 'sin' must be a torch.Tensor, got int" in call_with(3, 5)


@pytest.mark.parametrize(
    "out, got",
    [
        (torch.empty(3, N, dtype=torch.float16), "got Tensor"),  # len() 3, as many as the outputs
        (5, "got int"),
        ({"y": None, "q": None, "scale": None}, "got dict"),
        ((t for t in ()), "got generator"),
        ("yqs", "got str"),
        ([torch.empty(M, N, dtype=torch.float16)], "got 1 item(s)"),
    ],
)
def test_out_that_is_not_a_sequence_of_the_outputs(out, got):
    with pytest.raises(KernelArgumentError) as caught:
        fused.kernel(*good_args(), out=out)
    assert str(caught.value) == (f"rms_norm_rope_quant_fused: out must be an Outputs, tuple or list of 3 tensors (y, q, scale), {got}")


def test_out_with_a_missing_tensor_is_named():
    with pytest.raises(KernelArgumentError, match="output 'q' must be a torch.Tensor, got NoneType"):
        fused.kernel(*good_args(), out=fused.Outputs(torch.empty(M, N, dtype=torch.float16), None, torch.empty(M, 1)))


def test_wrong_output_buffers():
    outs = fused.Outputs(torch.empty(M, N, dtype=torch.float16), torch.empty(M, N, dtype=torch.float16), torch.empty(M, 1))
    with pytest.raises(KernelArgumentError, match="output 'q' must be torch.float8_e4m3fn"):
        fused.kernel(*good_args(), out=outs)
