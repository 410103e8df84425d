"""The GPU comparator's fp8 rule, on the CPU: a code may differ by one step, or by more only where both
values agree within fp32 noise of their group's range (near zero in e5m2); a real error must fail."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from fusegen import testing

FP8 = torch.float8_e5m2
MODULE = SimpleNamespace(OUTPUTS=[SimpleNamespace(name="q"), SimpleNamespace(name="scale")])


def quantize(values: torch.Tensor):
    scale = values.abs().amax(dim=-1, keepdim=True) / torch.finfo(FP8).max
    return (values / scale).to(FP8), scale


def fresh_values() -> torch.Tensor:
    return torch.randn(16, 1024, generator=torch.Generator().manual_seed(int(torch.randint(1 << 30, ())))) * 3


def compare(values: torch.Tensor, kernel_values: torch.Tensor) -> None:
    rq, scale = quantize(values)
    q = (kernel_values / scale).to(FP8)
    testing.compare(MODULE, [q, scale], [rq, scale.clone()], "float16")


def test_a_near_zero_value_within_fp32_noise_may_land_several_codes_away():
    values = fresh_values()
    scale = values.abs().amax(dim=-1, keepdim=True) / torch.finfo(FP8).max
    # 0.01 in scaled units sits where e5m2's step is 2^-9; the kernel's value is 0.006 away, ~3 codes,
    # far inside the 2^-20 × 57344 ≈ 0.055 noise of a group that reaches 57344.
    values[3, 5] = 0.01 * scale[3, 0]
    kernel = values.clone()
    kernel[3, 5] = 0.016 * scale[3, 0]
    assert testing._fp8_code_distance((values / scale).to(FP8), (kernel / scale).to(FP8)).max() > 1
    compare(values, kernel)


def test_a_value_two_codes_off_in_the_normal_range_fails():
    values = fresh_values()
    scale = values.abs().amax(dim=-1, keepdim=True) / torch.finfo(FP8).max
    values[7, 100] = 640.0 * scale[7, 0]  # e5m2 codes between 512 and 1024 are 128 apart
    kernel = values.clone()
    kernel[7, 100] = 896.0 * scale[7, 0]
    with pytest.raises(AssertionError, match="codes differ by up to 2 steps"):
        compare(values, kernel)


def test_many_one_step_differences_fail():
    values = fresh_values()
    kernel = values * (1 + 2.0**-3)  # about half a code everywhere: far more than 1e-3 of codes move
    with pytest.raises(AssertionError):
        compare(values, kernel)
