"""Rescale: v = x · factor, or v = x · factor · w with a per-column weight w, in float32.

What models multiply a row by between its norm and what reads it: attention's softmax scale 1/√head_dim
folded into q after QK-norm and RoPE, Gemma's embedding normaliser √hidden, LayerScale's learned
per-channel γ (CaiT, DINOv2: factor 1, weight). The row stays what the ops around it expect, so the op
may run anywhere after the norm and before the quantiser, before or after RoPE.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..codegen import KernelFrame, literal
from ..cuda_checks import Check, row_access
from ..model import Constant, Dim, Schedule, Stage, Tensor
from . import FLOAT32_MIN_NORMAL, NORMALIZE, QUANTIZE, ChainContext, Op, OpSpec, between, described, kind_field, register
from .rmsnorm import sample_weight

# The factor is a float32 constant of the kernel: beyond float32's largest finite value it would be inf,
# and below 2^-126 in magnitude it is 0 or flushed to 0 by the GPU's fast math, so every output 0 (or
# NaN, times an infinite value). The bounds also reject nan and inf.
FACTOR_MAX = (2 - 2.0**-23) * 2.0**127  # float32's largest finite value
FACTOR_RANGE = f"a number from {-FACTOR_MAX!r} to {FACTOR_MAX!r} (float32's range), at least {FLOAT32_MIN_NORMAL!r} (2^-126) in magnitude"
SCALE_FACTOR = "SCALE_FACTOR"


class RescaleSpec(OpSpec):
    kind: Literal["rescale"] = kind_field("rescale")
    factor: float = Field(
        default=1.0,
        ge=-FACTOR_MAX,
        le=FACTOR_MAX,
        description=FACTOR_RANGE,
        json_schema_extra=described(
            f"Multiply the row by this constant, in float32 (a softmax scale, Gemma's √hidden): {FACTOR_RANGE}; 1.0 needs weight = true."
        ),
    )
    weight: bool = Field(
        default=False,
        json_schema_extra=described("Multiply by a weight scale_weight (hidden,) of the activation dtype too (LayerScale's γ)."),
    )


def check(op: RescaleSpec, ctx: ChainContext) -> list[tuple[str, str]]:
    if abs(op.factor) < FLOAT32_MIN_NORMAL:
        return [("factor", f"must be {FACTOR_RANGE}: 0, or a factor float32 rounds or flushes to 0, zeroes the row; got {op.factor!r}")]
    if op.factor == 1.0 and not op.weight:
        # Multiplying by one leaves the row as it came: more likely a factor or the weight was left out.
        return [("factor", "is 1.0 with weight = false: the op would leave the row as it is; set another factor, weight = true, or both")]
    return []


def plan(op: RescaleSpec, index: int, ctx: ChainContext) -> Stage:
    weight = Tensor("ScaleWeight", "scale_weight", ctx.dtype, (Dim(size=ctx.hidden),), "input", "per-column factor w")
    factor = (Constant(SCALE_FACTOR, op.factor, "rescale: the row's constant factor, in float32"),) if op.factor != 1.0 else ()
    return Stage(
        index=index,
        kind="rescale",
        summary=f"Rescale(factor={op.factor!r}, weight={op.weight})",
        params={"factor": op.factor, "weight": op.weight},
        inputs=(weight,) if op.weight else (),
        constants=factor,
    )


def emit_kernel(stage: Stage, frame: KernelFrame) -> list[str]:
    at = frame.at("j")
    factor = f" * {SCALE_FACTOR}" if stage.params["factor"] != 1.0 else ""
    weight = f" * {frame.column_param(stage.inputs[0])}" if stage.params["weight"] else ""
    return [frame.loop(("j", frame.columns)), f"    row[{at}] = row[{at}]{factor}{weight}"]


def emit_reference(stage: Stage, hidden: int) -> list[str]:
    factor = f" * {literal(stage.params['factor'])}" if stage.params["factor"] != 1.0 else ""
    weight = " * scale_weight.float()" if stage.params["weight"] else ""
    return [f"v = v{factor}{weight}"]


class Rescale(Op[RescaleSpec]):
    kind = "rescale"
    spec = RescaleSpec
    place = between(NORMALIZE, QUANTIZE, "rescaling")
    transforms_row = True
    # A per-row factor (the norm's rstd) commutes with per-column constants: a joint reduction may span it.
    linear = True
    readme_keys = (
        "`factor` (y = x·factor, or x·factor·w with `weight`, in float32: a softmax scale, Gemma's √hidden; "
        "2⁻¹²⁶ ≤ \\|factor\\| ≤ 3.4028235·10³⁸, default 1.0; 1.0 needs `weight`), `weight` (default false: input "
        "`scale_weight` (hidden,) of the dtype, LayerScale's γ); anywhere after the norm and before `quant_fp8`, before or after `rope`"
    )
    check = staticmethod(check)
    plan = staticmethod(plan)
    emit_kernel = staticmethod(emit_kernel)
    emit_reference = staticmethod(emit_reference)

    def oracle_step(self, v, op, inputs, head_dim):
        out = v.clone()
        for j in range(v.shape[1]):
            out[:, j] = v[:, j] * op["factor"] * (float(inputs["scale_weight"][j]) if op["weight"] else 1.0)
        return out, {}

    def sample_inputs(self, op, shapes, draw):
        return {"scale_weight": sample_weight(draw, shapes["scale_weight"])} if op["weight"] else {}

    def cuda_checks(self, stage: Stage, source: str, schedule: Schedule) -> list[Check]:
        # The row is scaled in registers; the weight is the op's only memory access.
        if not stage.params["weight"]:
            return []
        return [row_access(source, stage.inputs[0].param, schedule.vector_bytes, "rescale weight loads")]


OP = register(Rescale())
