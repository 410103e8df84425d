"""Tolerances shared by several ops' outputs. torch is imported where tensors are compared, not here:
building a kernel does not need it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Close:
    """got within atol + rtol·|want| of want, elementwise; (atol, rtol) per activation dtype."""

    by_dtype: Mapping[str, tuple[float, float]]
    reason: str

    def check(self, name: str, got: Mapping, want: Mapping, dtype: str, oracle_rows: Callable | None = None) -> None:
        import torch

        atol, rtol = self.by_dtype[dtype]
        torch.testing.assert_close(got[name].float(), want[name].float(), atol=atol, rtol=rtol, msg=lambda m: f"{name}: {m}")


# The seed's figures are the ceiling of every tolerance.
ROW = Close(
    {"float16": (1e-2, 1e-2), "bfloat16": (1e-2, 1e-2), "float32": (1e-4, 1e-4)},
    "Row outputs are rounded once from fp32; kernel and reference differ only by fp32 summation order (~1e-6 "
    "relative) before that rounding, so at most one ulp of the output dtype apart: fp16 ulp is 2^-10 relative, "
    "bf16 2^-7 (values are O(1..5) after normalisation), which the seed's 1e-2 covers. fp32 rows are not rounded "
    "at the end; only summation order and rsqrt's ~2 ulp differ (the seed's 1e-4).",
)
