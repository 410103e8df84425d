"""The FP8 scale is amax / fp8_max computed by two fmas (quant_fp8._quotient), not by a division: it must
give the correctly rounded quotient, the division's bits, for every float32 amax. quotient_is_exact checks
every significand of a binade (which stands for all, quotients being normal); the control shows the check
can fail: with a reciprocal 1024 ulps off, the correction step no longer lands on the rounded quotient."""

from __future__ import annotations

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
