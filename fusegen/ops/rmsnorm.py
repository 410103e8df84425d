"""RMSNorm: r = rsqrt(mean(x²) + eps), v = x · r · (weight_offset + w) (weight_offset 0, or Gemma's 1)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..codegen import HIDDEN, KernelFrame, literal, string_literal
from ..cuda_checks import Check, fragment_vector_store
from ..model import Constant, Layout, Reduction, Schedule, Scratch, Stage, Tensor
from ..tolerance import Close
from . import (
    FLOAT32_MIN_NORMAL,
    NORMALIZE,
    ChainContext,
    JointReduction,
    OpSpec,
    OutputDecl,
    added_key,
    described,
    kind_field,
    norm,
    register,
)
from .norm import NORM_KEYS, Extent, NormOp, oracle_extent

# eps is added to mean(x²) in float32 and the sum goes through rsqrt: an all-zero row gives rsqrt(eps),
# finite (at most 2^63) when eps is a normal float32. Above 1 eps would swamp the variance of rows of
# unit scale rather than guard a division. The bounds also reject nan and inf.
EPS_RANGE = f"a number from {FLOAT32_MIN_NORMAL!r} (2^-126, the smallest normal float32) to 1.0"
EPS_FIELD = dict(ge=FLOAT32_MIN_NORMAL, le=1.0, description=EPS_RANGE)
# The offset shifts the weight's origin (Gemma stores w and scales by 1 + w): an offset beyond what a
# weight of any activation dtype could hold itself (fp16's 65504) is no model's. 0 is no offset; a
# nonzero one below 2^-126 in magnitude would silently be 0 (or flushed) in float32. The bounds also
# reject nan and inf.
WEIGHT_OFFSET_MAX = 65504.0
WEIGHT_OFFSET_RANGE = (
    f"a number from {-WEIGHT_OFFSET_MAX!r} to {WEIGHT_OFFSET_MAX!r}, 0 or at least {FLOAT32_MIN_NORMAL!r} (2^-126) in magnitude"
)


class RMSNormSpec(OpSpec):
    kind: Literal["rmsnorm"] = kind_field("rmsnorm")
    eps: float = Field(default=1e-6, **EPS_FIELD, json_schema_extra=described(f"Added to mean(x²) under the square root: {EPS_RANGE}."))
    weight: bool = Field(default=True, json_schema_extra=described("Multiply by a weight (hidden,) of the activation dtype."))
    weight_offset: float = Field(
        **added_key(0.0),
        ge=-WEIGHT_OFFSET_MAX,
        le=WEIGHT_OFFSET_MAX,
        description=WEIGHT_OFFSET_RANGE,
        json_schema_extra=described(
            f"Scale by weight_offset + w instead of w (Gemma: 1.0), in float32; needs weight = true: {WEIGHT_OFFSET_RANGE}."
        ),
    )
    over: norm.OverKey = norm.over_field()
    columns: list[int] | None = norm.columns_field()


def check(op: RMSNormSpec, ctx: ChainContext) -> list[tuple[str, str]]:
    if problems := norm.check(op, ctx):
        return problems
    if op.weight_offset and abs(op.weight_offset) < FLOAT32_MIN_NORMAL:
        return [("weight_offset", f"must be {WEIGHT_OFFSET_RANGE}: a smaller offset is 0 in float32, got {op.weight_offset!r}")]
    if op.weight_offset and not op.weight:
        # Without a weight the offset would scale every column by one constant, which no model does: more
        # likely weight = false was meant for a model without an offset.
        return [
            (
                "weight_offset",
                f"needs weight = true (the offset is added to the weight), got weight_offset = {op.weight_offset!r} with weight = false",
            )
        ]
    return []


def weight_tensor(extent: Extent, dtype: str, hidden: int, offset: float = 0.0) -> Tensor:
    return extent.per_column("Weight", "weight", dtype, hidden, "per-column scale w", offset)


def rstd_tensor(extent: Extent) -> Tensor:
    return extent.statistic("Rstd", "rstd", "1/sqrt(var + eps)")


# A norm's statistics (mean, rstd) are fp32 values of the same loaded inputs in kernel and reference:
# they differ by reduction order only.
STAT = Close(
    {"float16": (1e-4, 1e-4), "bfloat16": (1e-4, 1e-4), "float32": (1e-4, 1e-4)},
    "fp32 statistics of the same loaded values: reduction-order differences only",
)
RSTD = OutputDecl("rstd", "rstd", "Write the norm's 1/sqrt(var + eps), float32 (M,), or (M, heads) with over = 'head'.", STAT)


def sample_weight(draw, shape: tuple[int, ...], offset: float = 0.0):
    """A per-column weight whose scale (offset + w) is near 1: it neither cancels the row nor hides its
    values. With Gemma's offset 1 the weights themselves are near 0, as Gemma's are."""
    return 1.0 - offset + 0.25 * draw.normal(shape)


def plan(op: RMSNormSpec, index: int, ctx: ChainContext) -> Stage:
    extent = Extent.of(op, ctx)
    inputs = (weight_tensor(extent, ctx.dtype, ctx.hidden, op.weight_offset),) if op.weight else ()
    outputs = (rstd_tensor(extent),) if ctx.outputs.get("rstd") else ()
    offset = f", weight_offset={op.weight_offset!r}" if op.weight_offset else ""
    return Stage(
        index=index,
        kind="rmsnorm",
        summary=f"RMSNorm(eps={op.eps!r}, weight={op.weight}{offset}{extent.summary()})",
        params={"eps": op.eps, "weight": op.weight, "weight_offset": op.weight_offset, "writes_rstd": bool(outputs)} | extent.params(),
        inputs=inputs,
        outputs=outputs,
        scratch=(
            Scratch("sumsq_terms", "fragment", ctx.rows(ctx.padded_hidden), "float32", "x² per column before the sum"),
            *extent.statistic_buffers(ctx, "rstd", "sumsq", "one reciprocal RMS"),
        ),
        reductions=(Reduction("sum of squares", "sum", "sumsq_terms", "rstd", extent.axis(), partials=extent.partials("sumsq")),),
        constants=(Constant("EPS", op.eps, "RMSNorm: added to mean(x²) under the square root"), *extent.constants("RMSNorm")),
    )


SUMSQ = ("sumsq", "sum", "rstd")


def _scale_expr(stage: Stage, frame: KernelFrame, value: str) -> str:
    weight = f" * {frame.column_param(stage.inputs[0])}" if stage.params["weight"] else ""
    return f"{value} * rstd[{Extent.read(stage.params).at_column(frame)}]{weight}"


def _rstd_lines(stage: Stage, frame: KernelFrame) -> list[str]:
    extent = Extent.read(stage.params)
    at = extent.at_statistic(frame)
    lines = extent.each_statistic(frame, [f"rstd[{at}] = T.rsqrt({extent.mean(f'rstd[{at}]')} + EPS)"])
    if stage.params["writes_rstd"]:
        lines += extent.store(frame, "Rstd", "rstd")
    return lines


def _sumsq_terms(stage: Stage, frame: KernelFrame) -> list[str]:
    at = frame.at("j")
    return [
        frame.alloc("sumsq_terms"),
        frame.alloc("rstd"),
        frame.loop(("j", frame.columns)),
        f"    sumsq_terms[{at}] = {Extent.read(stage.params).masked(f'row[{at}] * row[{at}]')}",
    ]


def emit_kernel(stage: Stage, frame: KernelFrame) -> list[str]:
    extent = Extent.read(stage.params)
    at = frame.at("j")
    return [
        *_sumsq_terms(stage, frame),
        *extent.reduce(frame, "sumsq_terms", "rstd", "sumsq"),
        *_rstd_lines(stage, frame),
        frame.loop(("j", frame.columns)),
        f"    row[{at}] = {extent.only_inside(frame, _scale_expr(stage, frame, f'row[{at}]'))}",
    ]


def emit_statistics(stage: Stage, frame: KernelFrame) -> list[str]:
    """Variant reread, a whole-row extent: the sum of squares over the tiles, then rstd (a head's lies in
    its tile: emit_kernel there)."""
    if not Extent.read(stage.params).whole_row:
        return []
    at = frame.at("j")
    return [
        frame.alloc("sumsq_terms"),
        frame.alloc("rstd"),
        *norm.tile_pass(frame, "sumsq_terms", f"row[{at}] * row[{at}]"),
        *frame.row_reduce("sumsq_terms", "rstd", "sum", "sumsq"),
        *_rstd_lines(stage, frame),
    ]


def emit_tile(stage: Stage, frame: KernelFrame) -> list[str]:
    """Variant reread: a tile times its row's rstd (and w)."""
    if not Extent.read(stage.params).whole_row:
        return emit_kernel(stage, frame)
    at = frame.at("j")
    return [frame.loop(("j", frame.columns)), f"    row[{at}] = {_scale_expr(stage, frame, f'row[{at}]')}"]


def emit_unscaled(stage: Stage, frame: KernelFrame) -> list[str]:
    """Joint reduction (a whole-row extent), before the exchange: the sum of squares per warp, and the
    row times w only."""
    lines = [*_sumsq_terms(stage, frame), *frame.row_partials("sumsq_terms", "sum", "sumsq")]
    if stage.params["weight"]:
        at = frame.at("j")
        lines += [frame.loop(("j", frame.columns)), f"    row[{at}] = row[{at}] * {frame.column_param(stage.inputs[0])}"]
    return lines


def emit_rescale(stage: Stage, frame: KernelFrame, row_scale: str) -> list[str]:
    """Joint reduction, after the exchange: rstd (`row_scale`), then the row (x·w, rotated) times it."""
    return [
        *_rstd_lines(stage, frame),
        frame.loop(("j", frame.columns)),
        f"    row[{frame.at('j')}] = row[{frame.at('j')}] * {row_scale}[{frame.at()}]",
    ]


def emit_naive(stage: Stage, frame: KernelFrame, dtype: str, writes_y: bool) -> list[str]:
    """The textbook kernel: the row is staged in shared memory and read from there twice (once, for the
    statistics alone, where Y is not written)."""
    each_column, at = frame.loop(("j", frame.columns)), frame.at("j")
    as_float = f'T.cast(row_shared[{at}], "float32")'
    statistics = [
        frame.alloc("row_shared"),
        frame.alloc("sumsq_terms"),
        # Left to inference, several rows of a padded width found no layout (bf16 768 at block_m 2).
        frame.pin_row_layout("sumsq_terms"),
        frame.alloc("rstd"),
        f"T.copy(X[{frame.token('0')}, 0], row_shared, disable_tma=True)",
        each_column,
        f"    sumsq_terms[{at}] = {as_float} * {as_float}",
        *frame.row_reduce("sumsq_terms", "rstd", "sum", "sumsq"),
        *_rstd_lines(stage, frame),
    ]
    if not writes_y:
        return statistics
    return [
        *statistics,
        each_column,
        f"    row_shared[{at}] = T.cast({_scale_expr(stage, frame, as_float)}, {string_literal(dtype)})",
        f"T.copy(row_shared, Y[{frame.token('0')}, 0], disable_tma=True)",
    ]


def emit_splitk(stage: Stage, frame: KernelFrame, dtype: str, writes_y: bool) -> list[str]:
    """Rows too long for registers: pass 1 adds x² chunk by chunk into each thread's own column sums and
    reduces the row once, pass 2 re-reads each chunk and scales it.

    One reduction per row, not one per chunk: each is a barrier, and with one per chunk a row's chunk
    loads waited on each other (8 dependent round trips per row at 4 chunks). Both loops are unrolled
    with no barrier inside, so every chunk's loads of a pass are in flight together. Without Y, pass 1
    alone gives the statistics."""
    blk_k, n, at = frame.layout.padded_hidden, frame.hidden, frame.at("j")
    chunks = -(-n // blk_k)
    col = "chunk_start + j"
    weight = ""
    if stage.params["weight"]:
        load, in_row = f'T.cast(Weight[{col}], "float32")', f"Weight[{col}]"
        if stage.params["weight_offset"]:
            load = in_row = frame.float_with_offset(in_row, stage.params["weight_offset"])
        weight = f" * T.if_then_else({col} < {HIDDEN}, {load}, 0.0)" if n % blk_k else f" * {in_row}"
    statistics = [
        frame.alloc("chunk"),
        frame.pin_row_layout("chunk"),
        frame.alloc("sumsq_terms"),
        frame.pin_row_layout("sumsq_terms"),
        frame.alloc("rstd"),
        "T.clear(sumsq_terms)",
        f"for k in T.unroll({chunks}):",
        f"    T.copy(X[{frame.token('0')}, k * {blk_k}], chunk)",
        f"    {frame.loop(('j', str(blk_k)))}",
        f"        sumsq_terms[{at}] = sumsq_terms[{at}] + chunk[{at}] * chunk[{at}]",
        *frame.row_reduce("sumsq_terms", "rstd", "sum", "sumsq"),
        *_rstd_lines(stage, frame),
    ]
    if not writes_y:
        return statistics
    return [
        *statistics,
        # Pass 2 walks the chunks backwards: the ones pass 1 read last are the likeliest still cached.
        f"for k in T.unroll({chunks}):",
        f"    chunk_start = ({chunks} - 1 - k) * {blk_k}",
        f"    T.copy(X[{frame.token('0')}, chunk_start], chunk)",
        f"    {frame.loop(('j', str(blk_k)))}",
        f"        chunk[{at}] = chunk[{at}] * rstd[{frame.at()}]{weight}",
        f"    T.copy(chunk, Y[{frame.token('0')}, chunk_start])",
    ]


def variant_scratch(variant: str, stage: Stage, layout: Layout, dtype: str) -> tuple[Scratch, ...]:
    shape = layout.rows(layout.padded_hidden)
    if variant == "naive":
        # No barrier of its own: each thread reads back the columns it copied (the committed CUDA shows
        # the exchange's barrier only).
        return (Scratch("row_shared", "shared", shape, dtype, "the row, read from shared memory twice (the textbook form)"),)
    return (Scratch("chunk", "fragment", shape, "float32", "one blk_k-column chunk of the row, in the row layout"),)


def emit_reference(stage: Stage, hidden: int) -> list[str]:
    offset = stage.params["weight_offset"]
    weight = (f" * (weight.float() + {literal(offset)})" if offset else " * weight.float()") if stage.params["weight"] else ""
    extent = Extent.read(stage.params)
    part = extent.reference_part
    lines = [
        *extent.reference_split(),
        f"rstd = torch.rsqrt({part}.square().mean(dim=-1, keepdim=True) + {literal(stage.params['eps'])})",
        f"{part} = {part} * rstd{weight}",
        *extent.reference_join(),
    ]
    if stage.params["writes_rstd"]:
        lines.append('out["rstd"] = rstd.squeeze(-1)')
    return lines


class RMSNorm(NormOp[RMSNormSpec]):
    kind = "rmsnorm"
    spec = RMSNormSpec
    place = NORMALIZE
    transforms_row = True
    outputs = (RSTD,)
    whole_kernel_variants = {"naive": emit_naive, "splitk": emit_splitk}
    statistic_passes = 1  # the sum of squares
    joint = JointReduction(
        provides_factor=True,
        # One factor per row: a per-head or column-range norm scales columns apart.
        applies=lambda stage: Extent.read(stage.params).whole_row,
        partial=SUMSQ,
        emit_partial=emit_unscaled,
        emit_finish=emit_rescale,
    )
    readme_keys = (
        "`eps` (2⁻¹²⁶ ≤ eps ≤ 1, default 1e-6), `weight` (default true), `weight_offset` (y = x·rstd·(weight_offset + w), "
        "in float32; Gemma: 1.0; −65504 ≤ weight_offset ≤ 65504, 0 or \\|weight_offset\\| ≥ 2⁻¹²⁶, default 0.0; needs `weight`), "
        + NORM_KEYS
    )

    check = staticmethod(check)
    plan = staticmethod(plan)
    emit_kernel = staticmethod(emit_kernel)
    emit_statistics = staticmethod(emit_statistics)
    emit_tile = staticmethod(emit_tile)
    emit_reference = staticmethod(emit_reference)
    variant_scratch = staticmethod(variant_scratch)

    def offers_variant(self, op, variant):
        # The textbook and split-row kernels normalise whole rows only.
        return variant in self.whole_kernel_variants and op.over == "row" and op.columns is None

    def oracle_step(self, v, op, inputs, head_dim):
        import torch

        validated = RMSNormSpec.model_validate(op)
        extent, offset = oracle_extent(validated, v.shape[1], head_dim), validated.weight_offset
        out, rstds = v.clone(), []
        for first, width in extent.segments(v.shape[1]):
            x = v[:, first : first + width]
            r = 1.0 / ((x * x).sum(dim=1, keepdim=True) / width + op["eps"]).sqrt()
            out[:, first : first + width] = x * r * (inputs["weight"].double() + offset if op["weight"] else 1.0)
            rstds.append(r)
        return out, {"rstd": extent.oracle_statistic(torch.cat(rstds, dim=1))}

    def sample_inputs(self, op, shapes, draw):
        return {"weight": sample_weight(draw, shapes["weight"], RMSNormSpec.model_validate(op).weight_offset)} if op["weight"] else {}

    def cuda_checks(self, stage: Stage, source: str, schedule: Schedule) -> list[Check]:
        return [fragment_vector_store(source, "sumsq_terms", "sum of squares vectorized", min(4, schedule.vector_elems))]


OP = register(RMSNorm())
