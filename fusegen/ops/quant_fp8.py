"""FP8 quantisation per group of consecutive columns (or per token):
scale = max(amax|v|, amax_floor) / fp8_max (ue8m0: rounded up to a power of two),
q = fp8(clamp(v · (1/scale), −fp8_max, fp8_max)); Scale is float32 (M, hidden / group_size).

The quotient is a multiply by the group's correctly rounded reciprocal, not a division per element:
an IEEE division costs ~20 instructions and made the quantising kernels instruction-bound. It
differs from v / scale by at most one fp32 ulp, so a code changes only where v / scale lies within
an ulp of an fp8 rounding midpoint; the reference computes the same product, bit for bit."""
from __future__ import annotations

from typing import Literal, Union

from pydantic import Field

from ..codegen import KernelFrame, literal, string_literal
from ..model import Dim, Reduction, Scratch, Stage, Tensor
from . import FLOAT32_MIN_NORMAL, RANK_QUANT, ChainContext, JointReduction, OpDef, OpSpec, described, kind_field, register

FP8_MAX = {"e4m3fn": 448.0, "e5m2": 57344.0}
FP8_DTYPE = {"e4m3fn": "float8_e4m3fn", "e5m2": "float8_e5m2"}
# An all-zero group's scale is amax_floor / fp8_max, then 1/scale (__frcp_rn) multiplies the row: the
# scale must be a normal float32 for the reciprocal to be finite and 0 · (1/scale) to be 0, so the floor
# is at least fp8_max · 2^-126 (exact in float32, so the rounded quotient is still ≥ 2^-126). ue8m0
# rounds such a scale up to a power of two at most 1/448, still finite. Above 1 the floor, not a group's
# own amax, would set the scale of groups of ordinary (unit-scale) values and waste fp8's range.
AMAX_FLOOR_MIN = {fp8: fp8_max * FLOAT32_MIN_NORMAL for fp8, fp8_max in FP8_MAX.items()}
AMAX_FLOOR_MAX = 1.0
AMAX_FLOOR_RANGE = (
    "a number from " + " or ".join(f"{low!r} (fp8 = '{fp8}')" for fp8, low in AMAX_FLOOR_MIN.items()) + f" to {AMAX_FLOOR_MAX!r}"
)
# Groups narrower than this would give each thread less than one 8-byte fp8 store.
MIN_GROUP = 8


class QuantFP8Spec(OpSpec):
    kind: Literal["quant_fp8"] = kind_field("quant_fp8")
    group_size: Union[int, Literal["token"]] = Field(
        default="token", description=f"'token' or a multiple of {MIN_GROUP} that divides hidden",
        json_schema_extra=described(f"Columns sharing one scale: 'token' (the whole row) or a multiple of {MIN_GROUP} that divides hidden."),
    )
    fp8: Literal["e4m3fn", "e5m2"] = Field(default="e4m3fn", json_schema_extra=described("The fp8 format of Q: e4m3fn (max 448) or e5m2 (max 57344)."))
    scale: Literal["fp32", "ue8m0"] = Field(
        default="fp32", json_schema_extra=described("fp32 = amax / fp8 max; ue8m0 = that rounded up to a power of two.")
    )
    # The per-format lower bound is checked in check(); these bounds also reject nan and inf.
    amax_floor: float = Field(
        default=1e-10,
        ge=min(AMAX_FLOOR_MIN.values()),
        le=AMAX_FLOOR_MAX,
        description=AMAX_FLOOR_RANGE,
        json_schema_extra=described(f"The smallest amax a scale is computed from (all-zero groups): {AMAX_FLOOR_RANGE}."),
    )


def group_width(op_params: dict, hidden: int) -> int:
    return hidden if op_params["group_size"] == "token" else op_params["group_size"]


def check(op: QuantFP8Spec, ctx: ChainContext) -> list[tuple[str, str]]:
    problems = []
    g = op.group_size
    if g != "token" and (g < MIN_GROUP or g % MIN_GROUP or ctx.hidden % g):
        problems.append(("group_size", f"must be 'token' or a multiple of {MIN_GROUP} that divides hidden = {ctx.hidden}, got {g}"))
    low = AMAX_FLOOR_MIN[op.fp8]
    if op.amax_floor < low:
        problems.append((
            "amax_floor",
            f"must be a number from {low!r} to {AMAX_FLOOR_MAX!r} with fp8 = '{op.fp8}', got {op.amax_floor!r}: an all-zero "
            f"group's scale, amax_floor / {FP8_MAX[op.fp8]!r}, must be a normal float32 (at least 2^-126) for its reciprocal to be finite",
        ))
    return problems


def plan(op: QuantFP8Spec, index: int, ctx: ChainContext) -> Stage:
    per_token = op.group_size == "token"
    groups = 1 if per_token else ctx.hidden // op.group_size
    padded_groups = 1 if per_token else ctx.padded_hidden // op.group_size
    fp8 = FP8_DTYPE[op.fp8]
    params = {
        "group_size": op.group_size,
        "groups": groups,
        "padded_groups": padded_groups,
        "fp8": op.fp8,
        "fp8_dtype": fp8,
        "fp8_max": FP8_MAX[op.fp8],
        "scale": op.scale,
        "amax_floor": op.amax_floor,
    }
    scale_shape = (ctx.block_m,) if per_token else (ctx.block_m, padded_groups)
    return Stage(
        index=index,
        kind="quant_fp8",
        summary=f"FP8 quant({op.fp8}, {'per token' if per_token else f'group {op.group_size}'}, scale {op.scale})",
        params=params,
        outputs=(
            Tensor("Q", "q", fp8, (Dim(tokens=True), Dim(size=ctx.hidden)), "output", "quantised row"),
            Tensor("Scale", "scale", "float32", (Dim(tokens=True), Dim(size=groups)), "output", "dequantisation scale per group"),
        ),
        scratch=(
            Scratch("group_scale", "fragment", scale_shape, "float32", "amax, then the scale, of each group"),
            Scratch("inverse_scale", "fragment", scale_shape, "float32", "1/scale, rounded once, so each element costs a multiply"),
            Scratch("quantized", "fragment", (ctx.block_m, ctx.padded_hidden), fp8, "fp8 row before its vector store"),
        ),
        reductions=(
            Reduction(
                "group amax",
                "absmax",
                "row" if per_token else f"row viewed as ({ctx.block_m}, {padded_groups}, {op.group_size})",
                "group_scale",
                "row" if per_token else f"group of {op.group_size} columns",
            ),
        ),
        decisions=(
            (
                "per-token amax reduces the whole row"
                if per_token
                else "group amax: the row fragment is reshaped to (rows, groups, group_size) and reduced over the last "
                "axis, so a group's threads combine by warp shuffles and no group value leaves registers"
            ),
        ),
    )


# ue8m0 rounds the scale up to a power of two with integer arithmetic on its bits: adding the largest
# mantissa carries into the exponent unless the mantissa is already zero. exp2(ceil(log2(s))) would
# depend on the log2 implementation's last ulp, and CUDA's and torch's disagree near powers of two.
POWER_OF_TWO_CEIL = (0x7FFFFF, 0x7F800000)


def _scale_expr(params: dict, amax: str) -> str:
    scale = f"T.max({amax}, {literal(params['amax_floor'])}) / {literal(params['fp8_max'])}"
    if params["scale"] == "ue8m0":
        carry, exponent = POWER_OF_TWO_CEIL
        bits = f'T.reinterpret({scale}, "int32")'
        return f'T.reinterpret(T.bitwise_and({bits} + {carry}, {exponent}), "float32")'
    return scale


def _reciprocal(value: str) -> str:
    # __frcp_rn is the correctly rounded 1/x whatever the compiler's fast-math setting; torch's 1.0 / t
    # on a tensor gives the same bits.
    return f'T.call_extern("float32", "__frcp_rn", {value})'


ROW_AMAX = ("row_amax", "absmax", "group_scale")


def _per_token(stage: Stage) -> bool:
    return stage.params["group_size"] == "token"


def _declare(stage: Stage, frame: KernelFrame) -> list[str]:
    shape = f"({frame.bm},)" if _per_token(stage) else f"({frame.bm}, {stage.params['padded_groups']})"
    return [
        f'group_scale = T.alloc_fragment({shape}, "float32")',
        f'inverse_scale = T.alloc_fragment({shape}, "float32")',
        f"quantized = T.alloc_fragment(({frame.bm}, {frame.columns}), {string_literal(stage.params['fp8_dtype'])})",
    ]


def _quantize(stage: Stage, frame: KernelFrame, row_scale: str | None = None) -> list[str]:
    """From each group's amax (in group_scale) to the stores; `row_scale`: a per-row factor applied to the
    row after its amax was taken, so the amax is multiplied by it too."""
    p = stage.params
    bm, cols = frame.bm, frame.columns
    fp8_max = literal(p["fp8_max"])
    if _per_token(stage):
        at, each_group, at_column = "i", f"for i in T.Parallel({bm}):", "i"
        store_scale = frame.store_per_row("Scale", "group_scale[i]", ", 0")
    else:
        g, groups = p["group_size"], p["padded_groups"]
        at, each_group, at_column = "i, k", f"for i, k in T.Parallel({bm}, {groups}):", f"i, j // {g}"
        store_scale = [f"T.copy(group_scale, Scale[{frame.token('0')}, 0])"]
    amax = f"group_scale[{at}]" + (f" * {row_scale}[i]" if row_scale else "")
    return [
        each_group,
        f"    group_scale[{at}] = {_scale_expr(p, amax)}",
        f"    inverse_scale[{at}] = {_reciprocal(f'group_scale[{at}]')}",
        f"for i, j in T.Parallel({bm}, {cols}):",
        # The clamp is the conversion's own: TileLang converts with __NV_SATFINITE, which saturates finite
        # values to ±fp8_max and keeps NaN NaN, as the reference's clamp does. A T.clamp here cost two
        # instructions per element in kernels that issue an instruction on ~2 of every 3 cycles (ncu,
        # NOTES.md step 14), and turned NaN into fp8_max.
        f"    quantized[i, j] = T.cast(row[i, j] * inverse_scale[{at_column}], {string_literal(p['fp8_dtype'])})",
        f"T.copy(quantized, Q[{frame.token('0')}, 0])",
        *store_scale,
    ]


def emit_kernel(stage: Stage, frame: KernelFrame) -> list[str]:
    if _per_token(stage):
        reduce = frame.row_reduce("row", "group_scale", "absmax", "row_amax")
    else:
        # A group spans group_size / vector lanes of one warp, so TileLang's reduction is shuffles only.
        reduce = [f"T.reduce_absmax(T.reshape(row, ({frame.bm}, {stage.params['padded_groups']}, {stage.params['group_size']})), group_scale, dim=2)"]
    return [*_declare(stage, frame), *reduce, *_quantize(stage, frame)]


def emit_amax_partial(stage: Stage, frame: KernelFrame) -> list[str]:
    """Joint reduction, before the exchange: the amax of the unscaled row per warp."""
    return [*_declare(stage, frame), *frame.row_partials("row", "absmax", "row_amax")]


def emit_reference(stage: Stage, hidden: int) -> list[str]:
    p = stage.params
    g = group_width(p, hidden)
    fp8_max = literal(p["fp8_max"])
    lines = [
        f"groups = v.view(v.shape[0], -1, {g})",
        f"amax = groups.abs().amax(dim=-1, keepdim=True).clamp_min({literal(p['amax_floor'])})",
        # A tensor divisor: divided by a Python float, torch multiplies by its rounded reciprocal, which
        # is not the IEEE quotient the kernel computes and shifts fp8 codes that sit on a tie.
        f"scale = amax / torch.full_like(amax, {fp8_max})",
    ]
    if p["scale"] == "ue8m0":
        carry, exponent = POWER_OF_TWO_CEIL
        lines.append(f"scale = ((scale.view(torch.int32) + {carry}) & {exponent}).view(torch.float32)")
    lines += [
        f'out["q"] = (groups * (1.0 / scale)).clamp(-{fp8_max}, {fp8_max}).to(torch.{p["fp8_dtype"]}).view(v.shape)',
        'out["scale"] = scale.squeeze(-1)',
    ]
    return lines


OP = register(
    OpDef(
        kind="quant_fp8",
        spec=QuantFP8Spec,
        rank=RANK_QUANT,
        transforms_row=False,
        check=check,
        plan=plan,
        emit_kernel=emit_kernel,
        emit_reference=emit_reference,
        columns_multiple_of=lambda op: 1 if op.group_size == "token" else op.group_size,
        # Group amaxes combine inside a warp (no exchange to share); a per-token amax crosses the warps.
        joint=JointReduction(applies=_per_token, partial=ROW_AMAX, emit_partial=emit_amax_partial, emit_finish=_quantize),
    )
)
