"""LayerNorm: mean = Σx/N, var = Σ(x − mean)²/N, rstd = rsqrt(var + eps), v = (x − mean)·rstd·w + b."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..codegen import HIDDEN, KernelFrame, literal
from ..cuda_checks import Check, fragment_vector_store
from ..model import Constant, Dim, Reduction, Schedule, Scratch, Stage, Tensor
from . import NORMALIZE, ChainContext, Op, OpSpec, OutputDecl, described, kind_field, register
from .rmsnorm import EPS_FIELD, EPS_RANGE, RSTD, STAT, rstd_tensor, sample_weight, weight_tensor

MEAN = OutputDecl("mean", "mean", "Write LayerNorm's row mean, float32 (M,).", STAT)


class LayerNormSpec(OpSpec):
    kind: Literal["layernorm"] = kind_field("layernorm")
    eps: float = Field(default=1e-5, **EPS_FIELD, json_schema_extra=described(f"Added to the variance under the square root: {EPS_RANGE}."))
    weight: bool = Field(default=True, json_schema_extra=described("Multiply by a weight (hidden,) of the activation dtype."))
    bias: bool = Field(default=True, json_schema_extra=described("Add a bias (hidden,) of the activation dtype."))


def plan(op: LayerNormSpec, index: int, ctx: ChainContext) -> Stage:
    inputs = []
    if op.weight:
        inputs.append(weight_tensor(ctx.dtype, ctx.hidden))
    if op.bias:
        inputs.append(Tensor("Bias", "bias", ctx.dtype, (Dim(size=ctx.hidden),), "input", "per-column shift b"))
    outputs = []
    if ctx.outputs.get("mean"):
        outputs.append(Tensor("Mean", "mean", "float32", (Dim(tokens=True),), "output", "row mean"))
    if ctx.outputs.get("rstd"):
        outputs.append(rstd_tensor())
    shape = (ctx.block_m, ctx.padded_hidden)
    return Stage(
        index=index,
        kind="layernorm",
        summary=f"LayerNorm(eps={op.eps!r}, weight={op.weight}, bias={op.bias})",
        params={
            "eps": op.eps,
            "weight": op.weight,
            "bias": op.bias,
            "writes_mean": ctx.outputs.get("mean", False),
            "writes_rstd": ctx.outputs.get("rstd", False),
        },
        inputs=tuple(inputs),
        outputs=tuple(outputs),
        scratch=(
            Scratch("centered_sq", "fragment", shape, "float32", "(x − mean)² per column before the variance sum"),
            Scratch("mean", "fragment", (ctx.block_m,), "float32", "row mean, replicated across the row's threads"),
            Scratch("rstd", "fragment", (ctx.block_m,), "float32", "reciprocal standard deviation per row"),
        ),
        reductions=(
            Reduction("row sum", "sum", "row", "mean", "row", partials="row_sum"),
            Reduction("centered sum of squares", "sum", "centered_sq", "rstd", "row", partials="centered_sum"),
        ),
        decisions=(
            "variance from the centred values held in registers (two reductions, one read of x): exact where "
            "E[x²] − mean² would cancel catastrophically for rows with a large mean",
        ),
        constants=(Constant("EPS", op.eps, "LayerNorm: added to the variance under the square root"),),
    )


def emit_kernel(stage: Stage, frame: KernelFrame) -> list[str]:
    bm, cols = frame.bm, frame.columns
    centered = "row[i, j] - mean[i]"
    if frame.layout.pads_columns:
        # Padding columns hold 0, but 0 − mean is not 0: keep them out of the variance.
        centered = f"T.if_then_else(j < {HIDDEN}, row[i, j] - mean[i], 0.0)"
    affine = "row[i, j] * rstd[i]"
    if stage.params["weight"]:
        affine += f" * {frame.column_param('Weight')}"
    if stage.params["bias"]:
        affine += f" + {frame.column_param('Bias')}"
    lines = [
        frame.alloc("centered_sq"),
        frame.alloc("mean"),
        frame.alloc("rstd"),
        *frame.row_reduce("row", "mean", "sum", "row_sum"),
        f"for i in T.Parallel({bm}):",
        f"    mean[i] = mean[i] / {HIDDEN}",
        f"for i, j in T.Parallel({bm}, {cols}):",
        f"    row[i, j] = {centered}",
        f"for i, j in T.Parallel({bm}, {cols}):",
        "    centered_sq[i, j] = row[i, j] * row[i, j]",
        *frame.row_reduce("centered_sq", "rstd", "sum", "centered_sum"),
        f"for i in T.Parallel({bm}):",
        f"    rstd[i] = T.rsqrt(rstd[i] / {HIDDEN} + EPS)",
    ]
    if stage.params["writes_mean"]:
        lines += frame.store_per_row("Mean", "mean[i]")
    if stage.params["writes_rstd"]:
        lines += frame.store_per_row("Rstd", "rstd[i]")
    lines += [f"for i, j in T.Parallel({bm}, {cols}):", f"    row[i, j] = {affine}"]
    return lines


def emit_reference(stage: Stage, hidden: int) -> list[str]:
    p = stage.params
    lines = [
        "mean = v.mean(dim=-1, keepdim=True)",
        "centered = v - mean",
        f"rstd = torch.rsqrt(centered.square().mean(dim=-1, keepdim=True) + {literal(p['eps'])})",
        "v = centered * rstd" + (" * weight.float()" if p["weight"] else "") + (" + bias.float()" if p["bias"] else ""),
    ]
    if p["writes_mean"]:
        lines.append('out["mean"] = mean.squeeze(-1)')
    if p["writes_rstd"]:
        lines.append('out["rstd"] = rstd.squeeze(-1)')
    return lines


class LayerNorm(Op[LayerNormSpec]):
    kind = "layernorm"
    spec = LayerNormSpec
    place = NORMALIZE
    transforms_row = True
    outputs = (MEAN, RSTD)
    readme_keys = "`eps` (2⁻¹²⁶ ≤ eps ≤ 1, default 1e-5), `weight`, `bias` (default true)"
    plan = staticmethod(plan)
    emit_kernel = staticmethod(emit_kernel)
    emit_reference = staticmethod(emit_reference)

    def oracle_step(self, v, op, inputs):
        n = v.shape[1]
        mean = v.sum(dim=1, keepdim=True) / n
        var = ((v - mean) ** 2).sum(dim=1, keepdim=True) / n
        rstd = 1.0 / (var + op["eps"]).sqrt()
        out = (v - mean) * rstd
        if op["weight"]:
            out = out * inputs["weight"].double()
        if op["bias"]:
            out = out + inputs["bias"].double()
        return out, {"mean": mean[:, 0], "rstd": rstd[:, 0]}

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
