"""The op registry. Each op is one module holding its spec model, plan stage, TileLang fragment,
torch reference and ledger bytes; registering it is the one line at the bottom of that module plus
its import below."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from pydantic import BaseModel, ConfigDict, Field

from ..model import Layout

# Order a chain must follow: at most one op of each kind, in increasing rank. Normalising first,
# rotating the normalised value, quantising last is the only order in which each stage's input is
# what the next expects (quantised values cannot be normalised or rotated).
RANK_NORM, RANK_ROTATE, RANK_QUANT = 0, 1, 2
RANK_NAMES = {RANK_NORM: "normalization (rmsnorm | layernorm)", RANK_ROTATE: "rope", RANK_QUANT: "quant_fp8"}

# 2^-126: below it a float32 is subnormal, which the GPU's fast math flushes to 0. A spec constant that
# an all-zero row reaches unchanged (eps under rsqrt, amax_floor as a scale under a reciprocal) must be
# at least this once rounded to float32, or the row's outputs are 0 · inf = NaN. A float64 bound at an
# exact float32 value holds after rounding too: rounding to nearest is monotonic.
FLOAT32_MIN_NORMAL = 2.0**-126


def described(text: str) -> dict:
    """`Field(json_schema_extra=described(...))`: what a key means, for `fusegen schema` and the editors
    that read it. Not `Field(description=...)`: spec.py's errors quote a description as what is allowed."""
    return {"description": text}


def kind_field(kind: str):
    return Field(json_schema_extra=described(f"The op: {kind}. Ops run in the order rmsnorm | layernorm → rope → quant_fp8, each at most once."))


class OpSpec(BaseModel):
    """Base of every op's spec model: unknown keys are errors, values are checked strictly."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


@dataclass(frozen=True)
class ChainContext:
    """What an op sees of the rest of the spec when it plans and validates itself."""

    dtype: str
    hidden: int
    outputs: dict  # output name -> requested (bool)
    layout: Layout | None = None  # how a block covers its rows; None while the spec is only validated

    @property
    def block_m(self) -> int:
        return self.layout.block_m if self.layout else 1

    @property
    def padded_hidden(self) -> int:
        return self.layout.padded_hidden if self.layout else self.hidden


@dataclass(frozen=True)
class JointReduction:
    """An op's row reduction split around a shared exchange, so that the norm's sum of squares and the
    quantiser's per-token amax cross the warps together: one barrier per row instead of two.

    It rests on the norm's per-row factor (rstd) commuting with every op between the two: the norm
    hands on x·w, the ops between are linear in the row, the amax is taken of the unscaled row, and the
    factor is applied after the exchange. max_j fl(rstd·|r_j|) = fl(rstd·max_j |r_j|) because rounding
    is monotonic, so the scale is exactly the amax of the values quantised."""

    applies: Callable  # Stage -> bool: this instance of the op can take part
    partial: tuple[str, str, str]  # (name, reduce op, result fragment) for KernelFrame.exchange
    emit_partial: Callable  # (Stage, KernelFrame) -> lines before the exchange
    emit_finish: Callable  # (Stage, KernelFrame, row_scale) -> lines after it; row_scale: the norm's factor


@dataclass(frozen=True)
class OpDef:
    kind: str
    spec: type[OpSpec]
    rank: int
    transforms_row: bool  # writes a new row value (norm, rope) rather than side outputs only
    plan: Callable  # (op_spec, index, ChainContext) -> Stage
    emit_kernel: Callable  # (Stage, KernelFrame) -> list[str]
    emit_reference: Callable  # (Stage, ReferenceFrame-like dict) -> list[str]
    columns_multiple_of: Callable = lambda op: 1  # op_spec -> the padded row must be a multiple of this
    accepts_layout: Callable = lambda op, hidden, vector, threads: True  # can the op work on this row layout
    whole_kernel_variants: dict = field(default_factory=dict)  # variant -> (Stage, KernelFrame) -> lines
    output_flags: tuple[str, ...] = ()  # [outputs] keys this op may set
    check: Callable = lambda op, ctx: []  # (op_spec, ChainContext) -> [(key, message)] for cross-field rules
    linear: bool = False  # commutes with scaling the row by a per-row factor (may sit inside a joint reduction)
    joint: JointReduction | None = None


REGISTRY: dict[str, OpDef] = {}


def register(op: OpDef) -> OpDef:
    REGISTRY[op.kind] = op
    return op


from . import layernorm, quant_fp8, rmsnorm, rope  # noqa: E402,F401  (each registers itself)
