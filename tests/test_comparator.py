"""The GPU comparator's fp8 rule, on the CPU: a code may differ by one step, or by more only where both
values agree within fp32 noise of their group's range (near zero in e5m2); a real error must fail."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest
import torch

from fusegen import checking
from fusegen.ops.quant_fp8 import fp8_code_distance
from fusegen.runtime import TensorSpec
from fusegen.spec import KernelSpec

FP8 = torch.float8_e5m2
MODULE = SimpleNamespace(OUTPUTS=[TensorSpec("q", FP8, ("m", 1024)), TensorSpec("scale", torch.float32, ("m", 1))])


def quantize(values: torch.Tensor):
    scale = values.abs().amax(dim=-1, keepdim=True) / torch.finfo(FP8).max
    return (values / scale).to(FP8), scale


def seeded() -> torch.Generator:
    """A fresh generator whose seed is printed: pytest shows it with a failure, so the draw can be replayed."""
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"inputs drawn with seed {seed}")
    return torch.Generator().manual_seed(seed)


def fresh_values() -> torch.Tensor:
    return torch.randn(16, 1024, generator=seeded()) * 3


def compare(values: torch.Tensor, kernel_values: torch.Tensor) -> None:
    rq, scale = quantize(values)
    q = (kernel_values / scale).to(FP8)
    checking.compare(MODULE, [q, scale], [rq, scale.clone()], "float16")


def test_a_near_zero_value_within_fp32_noise_may_land_several_codes_away():
    values = fresh_values()
    scale = values.abs().amax(dim=-1, keepdim=True) / torch.finfo(FP8).max
    # 0.01 in scaled units sits where e5m2's step is 2^-9; the kernel's value is 0.006 away, ~3 codes,
    # far inside the 2^-20 × 57344 ≈ 0.055 noise of a group that reaches 57344.
    values[3, 5] = 0.01 * scale[3, 0]
    kernel = values.clone()
    kernel[3, 5] = 0.016 * scale[3, 0]
    assert fp8_code_distance((values / scale).to(FP8), (kernel / scale).to(FP8)).max() > 1
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


E4M3 = torch.float8_e4m3fn


def tie_heavy_row():
    """Scaled values (scale 1) whose row 1 holds twelve exact midpoints between e4m3 codes 1.0 and 1.125:
    round-to-nearest-even gives 1.0; a kernel an fp32 ulp above gives 1.125. 12 of 8192 codes exceeds
    MAX_CODE_MISMATCH on its own."""
    values = torch.rand(4, 2048, generator=seeded()) * 400 - 200
    values[:, 0] = 448.0
    values[1, 10:22] = 1.0625
    kernel_codes = values.to(E4M3)
    kernel_codes[1, 10:22] = torch.tensor(1.125).to(E4M3)
    return values, kernel_codes


def compare_codes(values, kernel_codes, exact) -> None:
    scale = torch.ones(values.shape[0], 1)
    checking.compare(MODULE, [kernel_codes, scale], [values.to(E4M3), scale.clone()], "float16", exact)


def test_codes_that_differ_at_a_rounding_tie_of_the_exact_quotient_pass():
    values, kernel_codes = tie_heavy_row()
    with pytest.raises(AssertionError, match="not at a rounding tie"):
        compare_codes(values, kernel_codes, None)
    compare_codes(values, kernel_codes, lambda rows: {"q_unrounded": values[rows].double()})


def test_a_differing_code_whose_exact_quotient_is_not_at_the_midpoint_fails():
    values, kernel_codes = tie_heavy_row()
    exact = values.double()
    exact[1, 15] = 1.02  # rounds to 1.0 without doubt: a kernel giving 1.125 is wrong
    with pytest.raises(AssertionError, match="not at their rounding midpoint"):
        compare_codes(values, kernel_codes, lambda rows: {"q_unrounded": exact[rows]})


def test_exact_quotient_of_selected_rows_is_the_oracle_of_those_rows(tmp_path):
    spec = {
        "name": "tie_rows",
        "dtype": "bfloat16",
        "hidden": 512,
        "op": [{"kind": "rmsnorm"}, {"kind": "rope", "rope_dim": 64}, {"kind": "quant_fp8", "group_size": 128}],
    }
    module = checking.build_variant(KernelSpec.model_validate(spec), tmp_path)
    inputs = checking.random_inputs(module, 9, torch.Generator().manual_seed(3), device="cpu")
    oracle_rows = checking.oracle_of(module, inputs)
    whole = oracle_rows(torch.arange(9))
    rows = torch.tensor([7, 2])
    selected = oracle_rows(rows)
    assert set(selected) == set(whole) >= {"q_unrounded", "scale", "y"}
    for name, value in whole.items():
        assert torch.equal(selected[name], value[rows]), name


def joint_kernel_emulation(module, inputs, bias=1.0):
    """The joint-reduction kernel's arithmetic in torch fp32 (another summation order, x·w through RoPE,
    the amax before rstd, one factor rstd·(1/scale)): what the H200 ran for the stream case."""
    x, w, cos, sin = (t.float() for t in inputs)
    v = x * w
    rstd = torch.rsqrt((x**2).flip(1).sum(1, keepdim=True) / x.shape[1] + 1e-6)
    a, b = v[:, -64:-32].clone(), v[:, -32:].clone()
    v[:, -64:-32], v[:, -32:] = a * cos - b * sin, b * cos + a * sin
    scale = (v.abs().amax(1, keepdim=True) * rstd).clamp_min(1e-10) / 448.0
    return [(v * (rstd * (1.0 / scale)) * bias).to(E4M3), scale]


@pytest.mark.parametrize("seed", [28, None, None, None])  # 28: 2.7e-3 of one row's codes at ties
def test_the_joint_kernels_rounding_ties_pass_and_a_bias_of_one_percent_fails(seed, tmp_path):
    spec = {
        "name": "joint_ties",
        "dtype": "bfloat16",
        "hidden": 7168,
        "outputs": {"y": False},
        "op": [{"kind": "rmsnorm"}, {"kind": "rope", "rope_dim": 64}, {"kind": "quant_fp8"}],
    }
    module = checking.build_variant(KernelSpec.model_validate(spec), tmp_path)
    generator = torch.Generator().manual_seed(seed) if seed is not None else seeded()
    inputs = checking.random_inputs(module, 1, generator, device="cpu")
    exact = checking.oracle_of(module, inputs)
    checking.compare(module, joint_kernel_emulation(module, inputs), list(module.reference(*inputs)), "bfloat16", exact)
    with pytest.raises(AssertionError, match="not at their rounding midpoint"):
        checking.compare(module, joint_kernel_emulation(module, inputs, bias=1 + 2**-7), list(module.reference(*inputs)), "bfloat16", exact)


def test_a_one_step_tie_passes_at_any_magnitude_of_the_values():
    """The same rounding ties with every group's scale 64 (a rescale by √hidden before the quant, as the H200
    measured): the dequantised values are 64× larger and one e4m3 step (2^-3 of the value) apart, which the
    seed's rtol of 1e-1 refused above |v| = 4; two steps still fail."""
    values, kernel_codes = tie_heavy_row()
    scale = torch.full((values.shape[0], 1), 64.0)
    oracle = lambda rows: {"q_unrounded": values[rows].double()}  # noqa: E731
    checking.compare(MODULE, [kernel_codes, scale], [values.to(E4M3), scale.clone()], "float16", oracle)
    two_steps = kernel_codes.clone()
    two_steps[1, 10] = torch.tensor(1.25).to(E4M3)
    with pytest.raises(AssertionError):
        checking.compare(MODULE, [two_steps, scale], [values.to(E4M3), scale.clone()], "float16", oracle)


GROUPED = SimpleNamespace(OUTPUTS=[TensorSpec("q", FP8, ("m", 128)), TensorSpec("scale", torch.float32, ("m", 2))])
BOUNDARY = 2.0**-10  # a ue8m0 scale: amax / 57344 lands on it for amax = 56


def ue8m0(values: torch.Tensor):
    """Codes and ue8m0 scales of 64-value groups, the reference's way (kernel and reference share it)."""
    groups = values.view(values.shape[0], 2, 64)
    scale = groups.abs().amax(dim=-1, keepdim=True) / torch.finfo(FP8).max
    scale = ((scale.view(torch.int32) + 0x7FFFFF) & 0x7F800000).view(torch.float32)
    return (groups * (1.0 / scale)).to(FP8).view(values.shape), scale.squeeze(-1)


def scale_tie():
    """Row 2's first group has amax 56 exactly (amax / 57344 = 2^-10, kept); the kernel's fp32 amax one ulp
    above it rounds its scale up to 2^-9: a tie, where the kernel's codes are those of its own scale."""
    values = torch.randn(4, 128, generator=seeded())
    values[2, 5] = 56.0
    kernel_values = values.clone()
    kernel_values[2, 5] = torch.nextafter(torch.tensor(56.0), torch.tensor(57.0))
    q, scale = ue8m0(kernel_values)
    rq, rscale = ue8m0(values)
    assert scale[2, 0] == 2 * rscale[2, 0] == 2 * BOUNDARY
    return values, (q, scale), (rq, rscale)


def oracle_of(values, exact_scale=None):
    def rows_of(rows):
        v = values[rows].double()
        exact = v.view(len(rows), 2, 64).abs().amax(dim=-1) / torch.finfo(FP8).max
        rounded = 2.0 ** torch.ceil(torch.log2(exact))
        inverse = (1.0 / rounded.float()).double().repeat_interleave(64, dim=1)
        unrounded = exact if exact_scale is None else exact_scale[rows]
        return {"q_unrounded": (v.float().double() * inverse).float().double(), "scale_unrounded": unrounded, "quant_input": v}

    return rows_of


def test_ue8m0_scales_a_power_of_two_apart_at_a_tie_pass_with_the_codes_of_the_kernels_scale():
    values, got, want = scale_tie()
    with pytest.raises(AssertionError, match="scale"):
        checking.compare(GROUPED, got, want, "float16")  # without the oracle nothing proves the tie
    checking.compare(GROUPED, got, want, "float16", oracle_of(values))


def test_ue8m0_scales_a_power_of_two_apart_away_from_a_tie_fail():
    values, got, want = scale_tie()
    exact = values.double().view(4, 2, 64).abs().amax(dim=-1) / torch.finfo(FP8).max
    exact[2, 0] = BOUNDARY * 1.3  # the exact scale rounds up to 2^-9 without doubt
    with pytest.raises(AssertionError, match="is not at the power of two between them"):
        checking.compare(GROUPED, got, want, "float16", oracle_of(values, exact))


def test_codes_of_a_tied_group_are_held_to_the_kernels_own_scale():
    values, (q, scale), want = scale_tie()
    q = q.clone()
    q[2, :64] = want[0][2, :64]  # the reference's codes under the kernel's doubled scale: twice the values
    with pytest.raises(AssertionError, match="Q·Scale"):
        checking.compare(GROUPED, (q, scale), want, "float16", oracle_of(values))
