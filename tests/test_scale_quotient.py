"""The FP8 scale is amax / fp8_max computed by two fmas (quant_fp8._quotient), not by a division: it must
give the correctly rounded quotient, the division's bits, for every float32 amax. quotient_is_exact checks
every significand of a binade (which stands for all, quotients being normal); the control shows the check
can fail: with a reciprocal 1024 ulps off, the correction step no longer lands on the rounded quotient."""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import pytest

from fusegen.ops import quant_fp8
from fusegen.ops.quant_fp8 import FP8_MAX, fp8_max_reciprocal, quotient_is_exact


@pytest.mark.parametrize("fp8", sorted(FP8_MAX))
def test_the_two_fma_quotient_is_the_division_for_every_amax(fp8):
    assert quotient_is_exact(FP8_MAX[fp8])


def _float32_step(value: float, ulps: int) -> float:
    """The float32 `ulps` representable values from `value` (a positive float32)."""
    return struct.unpack("f", struct.pack("I", struct.unpack("I", struct.pack("f", value))[0] + ulps))[0]


def test_the_reciprocal_is_the_nearest_float32():
    for fp8_max in FP8_MAX.values():
        reciprocal = fp8_max_reciprocal(fp8_max)
        assert _float32_step(reciprocal, 0) == reciprocal
        exact = Fraction(1) / Fraction(fp8_max)
        assert all(abs(Fraction(reciprocal) - exact) < abs(Fraction(_float32_step(reciprocal, d)) - exact) for d in (-1, 1))


def test_a_wrong_reciprocal_fails_the_check(monkeypatch):
    nearest = fp8_max_reciprocal
    monkeypatch.setattr(quant_fp8, "fp8_max_reciprocal", lambda fp8_max: _float32_step(nearest(fp8_max), 1024))
    assert not any(quotient_is_exact(fp8_max) for fp8_max in FP8_MAX.values())


def _bits(value: float) -> int:
    return struct.unpack("I", struct.pack("f", value))[0]


def _ue8m0(amax: float, fp8_max: float) -> float:
    """The kernel's ue8m0 scale of a floored amax: the float32 quotient rounded up to a power of two on its bits."""
    carry, exponent = quant_fp8.POWER_OF_TWO_CEIL
    return struct.unpack("f", struct.pack("I", (_bits(struct.unpack("f", struct.pack("f", amax / fp8_max))[0]) + carry) & exponent))[0]


@pytest.mark.parametrize("fp8", sorted(FP8_MAX))
def test_the_ue8m0_reciprocal_by_subtraction_is_exact_over_every_scale(fp8):
    """1/scale of a ue8m0 scale is POWER_OF_TWO_RECIPROCAL − its bits: checked on every power of two from the
    smallest floor's scale to the largest float32 amax's; a step past either end of float32's normal
    range breaks it."""
    fp8_max = FP8_MAX[fp8]
    low, high = _ue8m0(quant_fp8.AMAX_FLOOR_MIN[fp8], fp8_max), _ue8m0(struct.unpack("f", struct.pack("I", 0x7F7FFFFF))[0], fp8_max)
    assert low == 2.0**-126 and high <= 2.0**120
    exponents = range(round(math.log2(low)), round(math.log2(high)) + 1)
    for e in exponents:
        assert quant_fp8.POWER_OF_TWO_RECIPROCAL - _bits(2.0**e) == _bits(2.0**-e)
    for beyond in (2.0**-127, 2.0**127):  # a subnormal scale; one whose reciprocal is subnormal
        assert quant_fp8.POWER_OF_TWO_RECIPROCAL - _bits(beyond) != _bits(1.0 / beyond)


def _float32(value: float) -> float:
    return struct.unpack("f", struct.pack("f", value))[0]


@pytest.mark.parametrize("fp8", sorted(FP8_MAX))
def test_every_fp32_scale_lies_where_the_written_out_reciprocal_is_frcp_rn(fp8):
    """quant_fp8._reciprocal writes out __frcp_rn's fast path, which is the whole call only for |x| in
    RECIPROCAL_FAST_PATH: the smallest scale (the lowest floor's) and the largest (float32's largest amax's) lie in
    it. tests/rcp_exhaustive.cu checks the path's bits against __frcp_rn's over that range on a GPU
    (test_gpu_edge_cases)."""
    low, high = quant_fp8.RECIPROCAL_FAST_PATH
    fp8_max = FP8_MAX[fp8]
    smallest = _float32(quant_fp8.AMAX_FLOOR_MIN[fp8] / fp8_max)
    largest = _float32(struct.unpack("f", struct.pack("I", 0x7F7FFFFF))[0] / fp8_max)
    assert low <= smallest and largest < high
