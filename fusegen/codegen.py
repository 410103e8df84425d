"""Text helpers shared by the op fragment emitters: how a stage names rows, tokens and guarded loads.

Everything here renders plan data (already validated numbers and fixed identifiers) into TileLang or
torch source; no value from a spec reaches these strings except numbers and the checked kernel name.
"""
from __future__ import annotations

from dataclasses import dataclass

from .model import Layout


def literal(value: float) -> str:
    """A float as Python source that round-trips exactly (repr of a finite float always does)."""
    return repr(float(value))


@dataclass(frozen=True)
class KernelFrame:
    """Names visible inside `with T.Kernel(...) as block:`; the row fragment is `row` (block_m, columns)."""

    layout: Layout
    tokens: str  # "m" (dynamic) or the pinned count

    @property
    def bm(self) -> int:
        return self.layout.block_m

    @property
    def columns(self) -> int:
        return self.layout.padded_hidden

    @property
    def hidden(self) -> int:
        return self.layout.hidden

    def token(self, i: str = "i") -> str:
        return f"block * {self.bm} + {i}" if self.bm > 1 else "block"

    @property
    def rows_may_overhang(self) -> bool:
        """Only a block of several rows can run past the last token; one row per block never does."""
        return self.bm > 1

    def column_param(self, param: str, col: str = "j") -> str:
        """A per-column parameter (weight, bias) as float32, zero on padding columns."""
        if self.layout.pads_columns:
            return f'T.if_then_else({col} < {self.hidden}, T.cast({param}[{col}], "float32"), 0.0)'
        return f"{param}[{col}]"

    def row_param(self, param: str, col: str, i: str = "i") -> str:
        """A per-token parameter (cos, sin); rows past the last token read nothing."""
        load = f"{param}[{self.token(i)}, {col}]"
        if self.rows_may_overhang:
            return f"T.if_then_else({self.token(i)} < {self.tokens}, {load}, 0.0)"
        return load

    def store_per_row(self, param: str, value: str, trailing_index: str = "") -> list[str]:
        """Writes one float per row (mean, rstd, a per-token scale) from a (block_m,) fragment."""
        target = f"{param}[{self.token()}{trailing_index}]"
        if self.rows_may_overhang:
            return [f"for i in T.Parallel({self.bm}):", f"    if {self.token()} < {self.tokens}:", f"        {target} = {value}"]
        return [f"for i in T.Parallel({self.bm}):", f"    {target} = {value}"]


def indent(lines: list[str], spaces: int) -> list[str]:
    pad = " " * spaces
    return [pad + line if line else line for line in lines]
