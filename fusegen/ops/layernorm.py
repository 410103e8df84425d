"""LayerNorm: mean = Σx/N, var = Σ(x − mean)²/N, rstd = rsqrt(var + eps), v = (x − mean)·rstd·w + b."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..codegen import KernelFrame, literal
from ..cuda_checks import Check, fragment_vector_store
from ..model import Constant, Reduction, Schedule, Scratch, Stage
from . import NORMALIZE, ChainContext, OpSpec, OutputDecl, described, kind_field, norm, register
from .norm import NORM_KEYS, Extent, NormOp, oracle_extent
from .rmsnorm import EPS_FIELD, EPS_RANGE, RSTD, STAT, rstd_tensor, sample_weight, weight_tensor

MEAN = OutputDecl("mean", "mean", "Write LayerNorm's mean, float32 (M,), or (M, heads) with over = 'head'.", STAT)


class LayerNormSpec(OpSpec):
    kind: Literal["layernorm"] = kind_field("layernorm")
    eps: float = Field(default=1e-5, **EPS_FIELD, json_schema_extra=described(f"Added to the variance under the square root: {EPS_RANGE}."))
    weight: bool = Field(default=True, json_schema_extra=described("Multiply by a weight (hidden,) of the activation dtype."))
    bias: bool = Field(default=True, json_schema_extra=described("Add a bias (hidden,) of the activation dtype."))
    over: norm.OverKey = norm.over_field()
    columns: list[int] | None = norm.columns_field()


def check(op: LayerNormSpec, ctx: ChainContext) -> list[tuple[str, str]]:
    return norm.check(op, ctx)


def plan(op: LayerNormSpec, index: int, ctx: ChainContext) -> Stage:
    extent = Extent.of(op, ctx)
    inputs = []
    if op.weight:
        inputs.append(weight_tensor(extent, ctx.dtype, ctx.hidden))
    if op.bias:
        inputs.append(extent.per_column("Bias", "bias", ctx.dtype, ctx.hidden, "per-column shift b"))
    outputs = []
    if ctx.outputs.get("mean"):
        outputs.append(extent.statistic("Mean", "mean", "mean"))
    if ctx.outputs.get("rstd"):
        outputs.append(rstd_tensor(extent))
    of = "head" if extent.over == "head" else "row"
    return Stage(
        index=index,
        kind="layernorm",
        summary=f"LayerNorm(eps={op.eps!r}, weight={op.weight}, bias={op.bias}{extent.summary()})",
        params={
            "eps": op.eps,
            "weight": op.weight,
            "bias": op.bias,
            "writes_mean": ctx.outputs.get("mean", False),
            "writes_rstd": ctx.outputs.get("rstd", False),
        }
        | extent.params(),
        inputs=tuple(inputs),
        outputs=tuple(outputs),
        scratch=(
            Scratch("centered_sq", "fragment", ctx.rows(ctx.padded_hidden), "float32", "(x − mean)² per column before the variance sum"),
            *extent.statistic_buffers(ctx, "mean", "row_sum", "the mean"),
            *extent.statistic_buffers(ctx, "rstd", "centered_sum", "the reciprocal standard deviation"),
        ),
        reductions=(
            Reduction(
                f"{of} sum",
                "sum",
                "centered_sq" if extent.over == "columns" else "row",
                "mean",
                extent.axis(),
                partials=extent.partials("row_sum"),
            ),
            Reduction("centered sum of squares", "sum", "centered_sq", "rstd", extent.axis(), partials=extent.partials("centered_sum")),
        ),
        decisions=(
            "variance from the centred values held in registers (two reductions, one read of x): exact where "
            "E[x²] − mean² would cancel catastrophically for rows with a large mean",
        ),
        constants=(Constant("EPS", op.eps, "LayerNorm: added to the variance under the square root"), *extent.constants("LayerNorm")),
    )


def _affine(stage: Stage, frame: KernelFrame, centred: str) -> str:
    """A centred value of column j times its statistic's rstd, times weight, plus bias."""
    affine = f"{centred} * rstd[{Extent.read(stage.params).at_column(frame)}]"
    for tensor in stage.inputs:
        affine += f" * {frame.column_param(tensor)}" if tensor.arg == "weight" else f" + {frame.column_param(tensor)}"
    return affine


def emit_kernel(stage: Stage, frame: KernelFrame) -> list[str]:
    extent = Extent.read(stage.params)
    each_column, at, value = frame.loop(("j", frame.columns)), extent.at_column(frame), f"row[{frame.at('j')}]"
    centered = f"{value} - mean[{at}]"
    if frame.layout.pads_columns and extent.over == "row":
        # Padding columns hold 0, but 0 − mean is not 0: keep them out of the variance. (Padding is whole
        # heads, each of mean 0; a column range ends inside the row.)
        centered = f"T.if_then_else(j < {frame.width}, {centered}, 0.0)"
    affine = _affine(stage, frame, value)
    at_stat = extent.at_statistic(frame)
    lines = [frame.alloc("centered_sq"), frame.alloc("mean"), frame.alloc("rstd")]
    if extent.over == "columns":
        # The columns outside the range must not reach the sums: the mean's terms are masked into
        # centered_sq first, which the variance's terms overwrite.
        lines += [each_column, f"    centered_sq[{frame.at('j')}] = {extent.masked(value)}"]
        lines += extent.reduce(frame, "centered_sq", "mean", "row_sum")
    else:
        lines += extent.reduce(frame, "row", "mean", "row_sum")
    lines += [
        *extent.each_statistic(frame, [f"mean[{at_stat}] = {extent.mean(f'mean[{at_stat}]')}"]),
        each_column,
        f"    {value} = {extent.only_inside(frame, centered)}",
        each_column,
        f"    centered_sq[{frame.at('j')}] = {extent.masked(f'{value} * {value}')}",
        *extent.reduce(frame, "centered_sq", "rstd", "centered_sum"),
        *extent.each_statistic(frame, [f"rstd[{at_stat}] = T.rsqrt({extent.mean(f'rstd[{at_stat}]')} + EPS)"]),
    ]
    lines += _store_statistics(stage, frame)
    lines += [each_column, f"    {value} = {extent.only_inside(frame, affine)}"]
    return lines


def _store_statistics(stage: Stage, frame: KernelFrame) -> list[str]:
    """Mean and rstd out, where the spec asks for them."""
    extent = Extent.read(stage.params)
    stores = extent.store(frame, "Mean", "mean") if stage.params["writes_mean"] else []
    return stores + (extent.store(frame, "Rstd", "rstd") if stage.params["writes_rstd"] else [])


def emit_statistics(stage: Stage, frame: KernelFrame) -> list[str]:
    """Variant reread, a whole-row extent: the mean from one pass over the tiles, the centred squares from a
    second (the same two-pass variance as emit_kernel's), then rstd (a head's lie in its tile)."""
    extent = Extent.read(stage.params)
    if not extent.whole_row:
        return []
    value, at = f"row[{frame.at('j')}]", frame.at()
    return [
        frame.alloc("centered_sq"),
        frame.alloc("mean"),
        frame.alloc("rstd"),
        *norm.tile_pass(frame, "centered_sq", value),
        *frame.row_reduce("centered_sq", "mean", "sum", "row_sum"),
        f"mean[{at}] = {extent.mean(f'mean[{at}]')}",
        *norm.tile_pass(frame, "centered_sq", f"({value} - mean[{at}]) * ({value} - mean[{at}])"),
        *frame.row_reduce("centered_sq", "rstd", "sum", "centered_sum"),
        f"rstd[{at}] = T.rsqrt({extent.mean(f'rstd[{at}]')} + EPS)",
        *_store_statistics(stage, frame),
    ]


def emit_tile(stage: Stage, frame: KernelFrame) -> list[str]:
    """Variant reread: a tile centred, scaled (and shifted) with its row's statistics."""
    if not Extent.read(stage.params).whole_row:
        return emit_kernel(stage, frame)
    value = f"row[{frame.at('j')}]"
    return [frame.loop(("j", frame.columns)), f"    {value} = {_affine(stage, frame, f'({value} - mean[{frame.at()}])')}"]


def emit_reference(stage: Stage, hidden: int) -> list[str]:
    p = stage.params
    extent = Extent.read(p)
    part = extent.reference_part
    lines = [
        *extent.reference_split(),
        f"mean = {part}.mean(dim=-1, keepdim=True)",
        f"centered = {part} - mean",
        f"rstd = torch.rsqrt(centered.square().mean(dim=-1, keepdim=True) + {literal(p['eps'])})",
        f"{part} = centered * rstd" + (" * weight.float()" if p["weight"] else "") + (" + bias.float()" if p["bias"] else ""),
        *extent.reference_join(),
    ]
    if p["writes_mean"]:
        lines.append('out["mean"] = mean.squeeze(-1)')
    if p["writes_rstd"]:
        lines.append('out["rstd"] = rstd.squeeze(-1)')
    return lines


class LayerNorm(NormOp[LayerNormSpec]):
    kind = "layernorm"
    spec = LayerNormSpec
    place = NORMALIZE
    transforms_row = True
    outputs = (MEAN, RSTD)
    statistic_passes = 2  # the mean, then the centred squares
    readme_keys = "`eps` (2⁻¹²⁶ ≤ eps ≤ 1, default 1e-5), `weight`, `bias` (default true), " + NORM_KEYS
    check = staticmethod(check)
    plan = staticmethod(plan)
    emit_kernel = staticmethod(emit_kernel)
    emit_statistics = staticmethod(emit_statistics)
    emit_tile = staticmethod(emit_tile)
    emit_reference = staticmethod(emit_reference)

    def oracle_step(self, v, op, inputs, head_dim):
        import torch

        extent = oracle_extent(LayerNormSpec.model_validate(op), v.shape[1], head_dim)
        out, means, rstds = v.clone(), [], []
        for first, width in extent.segments(v.shape[1]):
            x = v[:, first : first + width]
            mean = x.sum(dim=1, keepdim=True) / width
            var = ((x - mean) ** 2).sum(dim=1, keepdim=True) / width
            rstd = 1.0 / (var + op["eps"]).sqrt()
            normed = (x - mean) * rstd
            if op["weight"]:
                normed = normed * inputs["weight"].double()
            if op["bias"]:
                normed = normed + inputs["bias"].double()
            out[:, first : first + width] = normed
            means.append(mean)
            rstds.append(rstd)
        return out, {"mean": extent.oracle_statistic(torch.cat(means, dim=1)), "rstd": extent.oracle_statistic(torch.cat(rstds, dim=1))}

    def sample_inputs(self, op, shapes, draw):
        drawn = {}
        if op["weight"]:
            drawn["weight"] = sample_weight(draw, shapes["weight"])
        if op["bias"]:
            drawn["bias"] = 0.1 * draw.normal(shapes["bias"])
        return drawn

    def cuda_checks(self, stage: Stage, source: str, schedule: Schedule) -> list[Check]:
        return [fragment_vector_store(source, "centered_sq", "centred squares vectorized", min(4, schedule.vector_elems))]


OP = register(LayerNorm())
