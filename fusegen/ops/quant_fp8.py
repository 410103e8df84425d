"""FP8 quantisation per group of consecutive columns (or per token):
scale = max(amax|v|, amax_floor) / fp8_max (ue8m0: rounded up to a power of two),
q = fp8(clamp(v · (1/scale), −fp8_max, fp8_max)); Scale is float32 (M, hidden / group_size), contiguous
or (scale_layout = "column") column-major with the tokens padded to 16 bytes, as FP8 GEMMs read it.

The quotient is a multiply by the group's correctly rounded reciprocal, not a division per element:
an IEEE division costs ~20 instructions and made the quantising kernels instruction-bound. It
differs from v / scale by at most one fp32 ulp, so a code changes only where v / scale lies within
an ulp of an fp8 rounding midpoint; the reference computes the same product, bit for bit."""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from ..codegen import HIDDEN, KernelFrame, indent, literal, shape_source, string_literal
from ..cuda_checks import Check, access, row_access
from ..model import DTYPE_BYTES, Constant, Dim, Extent, Reduction, Schedule, Scratch, Stage, Tensor, parts_of, rendered
from . import FLOAT32_MIN_NORMAL, QUANTIZE, ChainContext, JointReduction, Op, OpSpec, OutputDecl, added_key, described, kind_field, register

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
    group_size: int | Literal["token"] = Field(
        default="token",
        description=f"'token' or a multiple of {MIN_GROUP} that divides hidden",
        json_schema_extra=described(
            f"Columns sharing one scale: 'token' (the whole row) or a multiple of {MIN_GROUP} that divides hidden."
        ),
    )
    fp8: Literal["e4m3fn", "e5m2"] = Field(
        default="e4m3fn", json_schema_extra=described("The fp8 format of Q: e4m3fn (max 448) or e5m2 (max 57344).")
    )
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
    scale_layout: Literal["row", "column"] = Field(
        **added_key("row"),
        json_schema_extra=described(
            "row = Scale (M, groups) contiguous; column = an (M, groups) view with strides (1, M padded to a multiple of 4): "
            "column-major with 16-byte aligned columns, as DeepGEMM-style FP8 GEMMs read scales with TMA."
        ),
    )


def group_width(op_params: dict, hidden: int) -> int:
    return hidden if op_params["group_size"] == "token" else op_params["group_size"]


INT32_MAX = 2**31 - 1


def check(op: QuantFP8Spec, ctx: ChainContext) -> list[tuple[str, str]]:
    problems = []
    g = op.group_size
    if g != "token" and (g < MIN_GROUP or g % MIN_GROUP or ctx.hidden % g):
        problems.append(("group_size", f"must be 'token' or a multiple of {MIN_GROUP} that divides hidden = {ctx.hidden}, got {g}"))
    low = AMAX_FLOOR_MIN[op.fp8]
    if op.amax_floor < low:
        problems.append(
            (
                "amax_floor",
                f"must be a number from {low!r} to {AMAX_FLOOR_MAX!r} with fp8 = '{op.fp8}', got {op.amax_floor!r}: an all-zero "
                f"group's scale, amax_floor / {FP8_MAX[op.fp8]!r}, must be a normal float32 (at least 2^-126) for its reciprocal to be finite",
            )
        )
    if op.scale_layout == "column" and ctx.tokens and not problems:
        # A pinned count folds the column stride into the kernel's index literals, which are int32.
        groups = 1 if g == "token" else ctx.hidden // g
        most = 4 * (INT32_MAX // (4 * groups))
        if ctx.tokens > most:
            problems.append(
                (
                    "scale_layout",
                    f'"column" stores {groups} group(s) × ⌈tokens/4⌉·4 scales, indexed in int32 where tokens is pinned: at most '
                    f"{most} tokens, got tokens = {ctx.tokens} (leave tokens dynamic, or use scale_layout = 'row')",
                )
            )
    return problems


def _groups(columns: int, group_size: int) -> int:
    """The groups of `columns` columns (of a padded row: padding groups included), named as the kernel
    writes the count."""
    return parts_of(columns, group_size, "GROUP_SIZE")


STAGED_SCALES = "scale_staged"
SCALE_BYTES = 4  # Scale is float32 (ue8m0 too: the value, rounded up to a power of two)
SECTOR_BYTES = 32  # the unit of an L2 write
# Measured (H200, untuned, at sweep counts): with column-major scales one row a block ran 0.32–0.79 × copy
# in groups of 8–32 (their row-major twins 0.86–1.02), and blocks of several rows staging their scales
# 1.1–2.1 × faster on the specs the rule was fitted to (perf/probe51). Held out (perf/probe52), every one
# of 11 chains in groups of 8–16 ran faster (1.20–2.59 ×), but groups of 32 went either way (6 chains in
# both draws: two faster by 21 % and 3 %, four slower by 1–16 %): a row writes a quarter of the scales of
# groups of 8 there, and the block of several rows costs what that saves. Groups of 64–256 gained nothing.
SECTOR_ROWS_MAX_GROUP = 16


def staged_scales(op: QuantFP8Spec, ctx: ChainContext) -> bool:
    """Whether a block's column-major group scales leave through shared memory (codegen.store_columns_staged):
    in a block of several rows a group's scales are adjacent in Scale, and a run of them fills a sector that
    stores from registers, one scale a row, would each write part of."""
    return op.scale_layout == "column" and op.group_size != "token" and ctx.block_m > 1


def stages_scales(stage: Stage) -> bool:
    """Whether the stage was planned with its scales staged (staged_scales)."""
    return any(b.name == STAGED_SCALES for b in stage.scratch)


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
        "scale_layout": op.scale_layout,
    }
    scale_shape = ctx.rows() if per_token else ctx.rows(_groups(ctx.padded_hidden, op.group_size))
    scratch = ()
    if staged_scales(op, ctx):
        scratch = (
            Scratch(
                STAGED_SCALES,
                "shared",
                (_groups(ctx.block_hidden, op.group_size), ctx.layout.block_m),
                "float32",
                "the block's scales in Scale's column-major order, so each group's rows leave as one run",
                barrier=True,
            ),
        )
    constants = (
        Constant("FP8_MAX", FP8_MAX[op.fp8], f"the largest finite {op.fp8}: a group's amax maps to it"),
        Constant("FP8_MAX_RECIPROCAL", fp8_max_reciprocal(FP8_MAX[op.fp8]), "the float32 nearest 1 / FP8_MAX"),
        Constant("AMAX_FLOOR", op.amax_floor, "an all-zero group's amax, so its scale stays a normal float32"),
    )
    if not per_token:
        constants += (Constant("GROUP_SIZE", op.group_size, "consecutive columns sharing one scale"),)
    return Stage(
        index=index,
        kind="quant_fp8",
        summary=f"FP8 quant({op.fp8}, {'per token' if per_token else f'group {op.group_size}'}, scale {op.scale}"
        + (f", {op.scale_layout}-major scales)" if op.scale_layout != "row" else ")"),
        params=params,
        outputs=(
            Tensor("Q", "q", fp8, (Dim(tokens=True), Dim(size=ctx.hidden)), "output", "quantised row"),
            Tensor(
                "Scale",
                "scale",
                "float32",
                (Dim(tokens=True), Dim(size=groups if per_token else _groups(Extent(ctx.hidden, HIDDEN), op.group_size))),
                "output",
                "dequantisation scale per group",
                layout=op.scale_layout,
            ),
        ),
        scratch=(
            Scratch("group_scale", "fragment", scale_shape, "float32", "amax, then the scale, of each group"),
            Scratch("inverse_scale", "fragment", scale_shape, "float32", "1/scale, rounded once, so each element costs a multiply"),
            Scratch("quantized", "fragment", ctx.rows(ctx.padded_hidden), fp8, "fp8 row before its vector store"),
            Scratch(
                "row_abs",
                "fragment",
                ctx.rows(ctx.padded_hidden),
                "float32",
                "|row|, which the amax reduces: nvcc folds it into the max (an operand modifier), no registers",
            ),
            *scratch,
        ),
        reductions=(
            Reduction(
                "group amax",
                "max",
                "row_abs" if per_token else f"row_abs viewed as {ctx.rows(padded_groups, op.group_size)}",
                "group_scale",
                "row" if per_token else f"group of {op.group_size} columns",
                # A group spans lanes of one warp: its amax needs no exchange.
                partials="row_amax" if per_token else None,
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
        constants=constants,
    )


# ue8m0 rounds the scale up to a power of two with integer arithmetic on its bits: adding the largest
# mantissa carries into the exponent unless the mantissa is already zero. exp2(ceil(log2(s))) would
# depend on the log2 implementation's last ulp, and CUDA's and torch's disagree near powers of two.
POWER_OF_TWO_CEIL = (0x7FFFFF, 0x7F800000)


def fp8_max_reciprocal(fp8_max: float) -> float:
    """The float32 nearest 1 / fp8_max, as the kernel's FP8_MAX_RECIPROCAL."""
    return struct.unpack("f", struct.pack("f", 1.0 / fp8_max))[0]


def _quotient(amax: str) -> str:
    """amax / FP8_MAX, correctly rounded, without a division: q = amax · (1/FP8_MAX) is within an ulp, its
    error amax − q · FP8_MAX is exact in one fma, and one more fma corrects q by it (Markstein). nvcc's
    division by the constant is this sequence behind a range check and a branch to its slow path, ~8
    instructions a group more on every row; for a normal quotient the branch is never taken, and
    quotient_is_exact shows the sequence alone gives the division's bits for every float32 amax."""
    estimate = f"T.fmul({amax}, FP8_MAX_RECIPROCAL)"
    return f"T.fma(T.fma({estimate}, -FP8_MAX, {amax}), FP8_MAX_RECIPROCAL, {estimate})"


def quotient_is_exact(fp8_max: float) -> bool:
    """Whether _quotient gives the correctly rounded amax / fp8_max for every float32 amax of a normal
    quotient (amax_floor keeps it so). Every significand of one binade is checked, emulated exactly in
    float64 (torch): scaling amax by 2^k scales each step exactly, the fma's error term included (a
    multiple of q's ulp · fp8_max's, representable down to 2^-149), so one binade stands for all."""
    import torch

    reciprocal, divisor = fp8_max_reciprocal(fp8_max), float(fp8_max)
    amax = torch.arange(2**23, 2**24, dtype=torch.float64)  # the significands, exact in float32
    estimate = (amax * reciprocal).float().double()  # 24 × 24 bits: the product is exact, one rounding
    error = amax - estimate * divisor  # exact in float64: fp8_max has few significant bits
    if not torch.equal(error.float().double(), error):
        return False  # the fma's error term would round
    # q + error · reciprocal rounded once to float32: the float64 sum and its exact remainder (TwoSum);
    # the float32 rounding of the sum differs from the exact one only where the sum is a float32 midpoint.
    product = error * reciprocal  # exact: 24 × 24 bits
    total = estimate + product
    remainder = (estimate - (total - (total - estimate))) + (product - (total - estimate))
    corrected = total.float()
    offset = total - corrected.double()
    toward_total = torch.where(offset > 0, math.inf, -math.inf).float()
    neighbour = torch.nextafter(corrected, toward_total)  # the float32 on the sum's side (a binade's edge too)
    midpoint = (2 * offset.abs() == (neighbour - corrected).double().abs()) & (remainder != 0) & ((remainder > 0) == (offset > 0))
    corrected = torch.where(midpoint, neighbour, corrected)
    # The exact quotient's float32 rounding in integers: amax = m, fp8_max = odd · 2^e (an integer).
    odd = int(divisor)
    while odd % 2 == 0:
        odd //= 2
    shift = odd.bit_length()  # m · 2^shift / odd lands in [2^23, 2^25)
    numerator = torch.arange(2**23, 2**24, dtype=torch.int64) << shift
    quotient, rest = numerator // odd, numerator % odd
    wide = quotient >= 2**24
    quotient = torch.where(wide, numerator // (2 * odd), quotient)
    rest = torch.where(wide, numerator % (2 * odd), rest)
    bound = torch.where(wide, 2 * odd, odd)
    up = (2 * rest > bound) | ((2 * rest == bound) & (quotient % 2 == 1))
    quotient = quotient + up.long()
    value = quotient.double() * torch.where(wide, 2.0, 1.0) * 2.0**-shift * (odd / divisor)
    return torch.equal(corrected.double(), value)


def _scale_expr(params: dict, amax: str) -> str:
    """The kernel's scale from a group's floored amax (FP8_MAX, FP8_MAX_RECIPROCAL: the stage's constants)."""
    scale = _quotient(amax)
    if params["scale"] == "ue8m0":
        carry, exponent = POWER_OF_TWO_CEIL
        bits = f'T.reinterpret({scale}, "int32")'
        return f'T.reinterpret(T.bitwise_and({bits} + {carry}, {exponent}), "float32")'
    return scale


# A ue8m0 scale 2^e has the bits (e + 127) << 23, and 1/2^e the bits (127 − e) << 23: their sum is
# POWER_OF_TWO_RECIPROCAL for every scale the floor and float32's range allow (2^-126 ≤ scale ≤ 2^120),
# so one integer subtraction gives __frcp_rn's bits where the rounded reciprocal costs a MUFU, two fmas
# and a slow-path branch a group (10 % of the instructions of a 2880-column fp16 group-32 row; up to 11 %
# faster, perf/probe60). A reread program (KernelFrame.tiled) keeps the call: its held tiles fill the
# launch bound's registers, and scheduled without the slow path's call ptxas spilled two of them (28 and
# 40 bytes, 9 % and 21 % slower).
POWER_OF_TWO_RECIPROCAL = 0x7F000000
# __frcp_rn, the correctly rounded 1/x (torch's 1.0 / t on a tensor gives the same bits), is MUFU.RCP and one
# Newton step, x·r − 1 and r − r·(x·r − 1) by two fmas, behind a test of x's exponent that branches to a slow
# path for x outside RECIPROCAL_FAST_PATH (its SASS on sm_90a). An fp32 scale lies in [2^-126, 2^121): the
# floor keeps it normal (AMAX_FLOOR_MIN) and float32's largest amax ÷ 448 is under 2^120. There the fast path
# is the whole call, so the program writes it out — the same bits, which tests/rcp_exhaustive.cu checks on
# every float32 of that range on the GPU (test_gpu_edge_cases) — and ptxas no longer brackets each group's
# reciprocal in a branch and a reconvergence region it does not schedule across: a thread's reciprocals
# overlap (fp32 LayerNorm → RoPE → FP8 7168 on 128 threads: 14 groups a thread, 14 calls a row, each in a
# region of its own).
RECIPROCAL_FAST_PATH = (FLOAT32_MIN_NORMAL, 2.0**126)  # |x| where __frcp_rn takes no branch


def _reciprocal(params: dict, target: str, value: str, tiled: bool) -> list[str]:
    """Statements setting `target` to 1 / `value`, a group's scale: __frcp_rn's bits."""
    if params["scale"] == "ue8m0" and not tiled:
        return [f'{target} = T.reinterpret({POWER_OF_TWO_RECIPROCAL} - T.reinterpret({value}, "int32"), "float32")']
    if tiled:  # as the ue8m0 subtraction: without the call's branch ptxas spilled a reread program's tiles
        return [f'{target} = T.call_extern("float32", "__frcp_rn", {value})']
    return [
        "# 1/scale as __frcp_rn rounds it, without its slow-path branch: MUFU.RCP and one Newton step (quant_fp8._reciprocal)",
        f"{target} = T.fast_rcp({value})",
        f"{target} = T.fma({target}, T.fma(-{value}, {target}, 1.0), {target})",
    ]


ROW_AMAX = ("row_amax", "max", "group_scale")


def _per_token(stage: Stage) -> bool:
    return stage.params["group_size"] == "token"


def _declare(frame: KernelFrame) -> list[str]:
    return [frame.alloc("group_scale"), frame.alloc("inverse_scale"), frame.alloc("quantized")]


def _magnitudes(frame: KernelFrame) -> list[str]:
    """row_abs = |row|, for the amax to reduce with a plain max. TileLang's reduce_absmax folds max(x, 0 − x)
    into each step: a negate and two maxes per element, where max(acc, |x|) is one instruction (|x| is an
    operand modifier of FMNMX). In kernels that issue on most cycles (ncu, NOTES.md step 28) that was 6–12 %
    of their code."""
    return [
        frame.alloc("row_abs"),
        frame.pin_row_layout("row_abs"),
        frame.loop(("j", frame.columns)),
        f"    row_abs[{frame.at('j')}] = T.abs(row[{frame.at('j')}])",
    ]


def _quantize(stage: Stage, frame: KernelFrame, row_scale: str | None = None) -> list[str]:
    """From each group's amax (in group_scale) to the stores; `row_scale`: a per-row factor applied to the
    row after its amax was taken, so the amax is multiplied by it too."""
    p = stage.params
    if _per_token(stage):
        at, at_column = frame.at(), frame.at()
        each_group = frame.per_row
        store_scale = frame.store_per_row("Scale", "group_scale", ", 0")
    else:
        groups = rendered(_groups(frame.layout.padded_hidden, p["group_size"]))
        at, at_column = frame.at("k"), frame.at("j // GROUP_SIZE")

        def each_group(statements: list[str]) -> list[str]:
            return [frame.loop(("k", groups)), *indent(statements, 4)]

        per_part = _groups(frame.layout.hidden, p["group_size"])
        if stages_scales(stage):
            store_scale = [frame.alloc(STAGED_SCALES), *frame.store_columns_staged("group_scale", STAGED_SCALES, "Scale", per_part)]
        else:
            store_scale = frame.store_row("group_scale", "Scale", per_part)
    amax = f"group_scale[{at}]" + (f" * {row_scale}[{frame.at()}]" if row_scale else "")
    return [
        *each_group(
            [
                f"group_scale[{at}] = T.max({amax}, AMAX_FLOOR)",
                "# / FP8_MAX, correctly rounded, by two fmas (no division: quant_fp8.quotient_is_exact)",
                f"group_scale[{at}] = {_scale_expr(p, f'group_scale[{at}]')}",
                *_reciprocal(p, f"inverse_scale[{at}]", f"group_scale[{at}]", frame.tiled),
            ]
        ),
        frame.loop(("j", frame.columns)),
        # The clamp is the conversion's own: TileLang converts with __NV_SATFINITE, which saturates finite
        # values to ±fp8_max and keeps NaN NaN, as the reference's clamp does. A T.clamp here cost two
        # instructions per element in kernels that issue an instruction on ~2 of every 3 cycles (ncu,
        # NOTES.md step 14), and turned NaN into fp8_max.
        f"    quantized[{frame.at('j')}] = T.cast(row[{frame.at('j')}] * inverse_scale[{at_column}], {string_literal(p['fp8_dtype'])})",
        *frame.store_row("quantized", "Q"),
        *store_scale,
    ]


def emit_kernel(stage: Stage, frame: KernelFrame) -> list[str]:
    if _per_token(stage):
        reduce = frame.row_reduce("row_abs", "group_scale", "max", "row_amax")
    else:
        # A group spans group_size / vector lanes of one warp, so TileLang's reduction is shuffles only.
        groups = frame.layout.rows(
            _groups(frame.layout.padded_hidden, stage.params["group_size"]), Extent(stage.params["group_size"], "GROUP_SIZE")
        )
        reduce = [f"T.reduce_max(T.reshape(row_abs, {shape_source(groups)}), group_scale, dim={len(groups) - 1})"]
    return [*_declare(frame), *_magnitudes(frame), *reduce, *_quantize(stage, frame)]


def emit_amax_partial(stage: Stage, frame: KernelFrame) -> list[str]:
    """Joint reduction, before the exchange: the amax of the unscaled row per warp."""
    return [*_declare(frame), *_magnitudes(frame), *frame.row_partials("row_abs", "max", "row_amax")]


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


# Of all fp8 codes, at most this fraction may differ from the reference's (each by one step) without
# being shown a rounding tie: more means a systematic error (wrong scale, wrong rounding).
MAX_CODE_MISMATCH = 1e-3
# A code that differs by one step is a tie when the exact (float64) quotient lies this close, relative,
# to the midpoint between the two codes: kernel and reference each compute it in fp32 to ~2^-20, so
# they can only round to different sides of a midpoint that near. bf16 inputs without enough mantissa
# to spread their quotients make such ties common (above 1e-3 of a row's codes, NOTES.md step 14).
TIE_WINDOW = 2.0**-17
# Rows whose mismatching codes are checked against the float64 oracle (it runs on the CPU).
TIE_ROWS_CHECKED = 64
# The error of an fp32 chain of a few operations, as a fraction of its largest operands' magnitude.
FP32_NOISE = 2.0**-20
# Dequantised values: one fp8 step apart at most where v/scale sits on a rounding boundary. e4m3 has 3
# mantissa bits, so a step is up to 2^-3 of the value; e5m2 has 2, up to 2^-2. The seed's rtol of 1e-1
# lies below e4m3's own step: with its atol of 1e-1 it admits that step only for |v| ≤ 4, so a chain whose
# values are larger (a rescale by √hidden = 64 before the quant, on the H200: 6 of 1044480 codes one step
# apart at rounding ties, 0.1250001 relative) failed the same rounding that passes at O(1) values. The
# relative part is one step (and fp32's slack); the codes themselves are held to one step below.
FP8_STEP_SLACK = 1 + 2.0**-10
DEQUANT_TOLERANCE = {"float8_e4m3fn": (1e-1, 2.0**-3 * FP8_STEP_SLACK), "float8_e5m2": (2e-1, 2.0**-2 * FP8_STEP_SLACK)}

SCALE_CLOSE = dict.fromkeys(("float16", "bfloat16", "float32"), (1e-6, 1e-2))


def _scale_ties(scale, rscale, dtype, oracle_rows):
    """The groups (an (m, groups) mask) whose ue8m0 scales kernel and reference rounded to neighbouring
    powers of two, each proven a tie: kernel and reference compute a group's amax from fp32 values that agree
    to ~2^-20, so where amax / fp8_max lies that near a power of two one may round up to it and the other past
    it (on the H200, 1 of 1048576 groups of an RMSNorm → RoPE → e5m2 chain at 16384 tokens). Any other
    scale outside SCALE_CLOSE, or a tie the float64 oracle does not confirm, raises."""
    import torch

    atol, rtol = SCALE_CLOSE[dtype]
    apart = (scale - rscale).abs() > atol + rtol * rscale.abs()
    if not apart.any():
        return apart
    doubled = (scale == 2 * rscale) | (rscale == 2 * scale)
    rows = apart.any(dim=1).nonzero()[:, 0]
    if not doubled[apart].all() or oracle_rows is None or len(rows) > TIE_ROWS_CHECKED:
        torch.testing.assert_close(scale, rscale, atol=atol, rtol=rtol, msg=lambda m: f"scale: {m}")
    exact = oracle_rows(rows.cpu())["scale_unrounded"].to(scale.device)
    boundary = torch.minimum(scale[rows], rscale[rows]).double()
    far = apart[rows] & ((exact - boundary).abs() > TIE_WINDOW * boundary)
    if far.any():
        r, k = far.nonzero()[0].tolist()
        raise AssertionError(
            f"scale: {scale[rows[r], k].item()} against the reference's {rscale[rows[r], k].item()} at row {rows[r].item()}, group {k}: "
            f"the exact amax / fp8_max {exact[r, k].item()!r} is not at the power of two between them"
        )
    return apart


@dataclass(frozen=True)
class GroupScales:
    """Scale against the reference's: within SCALE_CLOSE, or in ue8m0 one power of two apart at a proven tie
    (_scale_ties)."""

    reason: str = (
        "scales are amax / fp8_max of fp32 values that agree to ~1e-6 (the seed allows 1e-2); ue8m0 rounds them up to a power of two"
    )

    def check(self, name, got, want, dtype, oracle_rows=None) -> None:
        _scale_ties(got[name], want[name], dtype, oracle_rows)


def fp8_code_distance(a, b):
    """Steps between fp8 values: codes are sign-magnitude, so map them to a monotonic integer line."""
    import torch

    def line(t):
        bits = t.view(torch.uint8).to(torch.int32)
        magnitude = bits & 0x7F
        return torch.where(bits & 0x80 != 0, -magnitude, magnitude)

    return (line(a) - line(b)).abs()


@dataclass(frozen=True)
class Fp8Codes:
    """Q against the reference's Q: the dequantised values (Q · Scale) within DEQUANT_TOLERANCE, and the
    fp8 codes themselves never more than one step apart (except near zero, within fp32 noise of the
    group's range), a one-step difference only at a rounding tie of the oracle's exact quotient in the
    first TIE_ROWS_CHECKED rows with any, or for at most MAX_CODE_MISMATCH of codes beyond those."""

    reason: str = "fp8 codes are exact roundings of fp32 quotients that kernel and reference compute to ~2^-20"

    def check(self, name, got, want, dtype, oracle_rows=None) -> None:
        import torch

        q, scale, rq, rscale = got[name], got["scale"], want[name], want["scale"]
        groups = scale.shape[1]
        ties = _scale_ties(scale, rscale, dtype, oracle_rows)
        if ties.any():
            rq, rscale, oracle_rows = _requantized(q, scale, rq, rscale, ties, oracle_rows)
        dequant = (q.float().view(q.shape[0], groups, -1) * scale[..., None]).view(q.shape)
        rdequant = (rq.float().view(q.shape[0], groups, -1) * rscale[..., None]).view(q.shape)
        atol, rtol = DEQUANT_TOLERANCE[str(q.dtype).removeprefix("torch.")]
        torch.testing.assert_close(dequant, rdequant, atol=atol, rtol=rtol, msg=lambda m: f"Q·Scale: {m}")
        distance = fp8_code_distance(q, rq)
        # fp32 evaluation order (the kernel's FMA contraction, torch's separate roundings) moves a value by
        # a few ulps of the largest operands that made it: up to ~2^-20 of its group's range. Near zero,
        # e5m2's codes are finer than that (RoPE's a·cos − b·sin can cancel to almost nothing), so such a
        # value may land several codes away while both dequantize to the same value within that noise.
        # Everywhere else a code may differ by one step at most.
        group_noise = (scale * torch.finfo(q.dtype).max * FP32_NOISE)[..., None].expand(-1, -1, q.shape[1] // groups).reshape(q.shape)
        beyond_noise = distance * ((dequant - rdequant).abs() > group_noise)
        assert beyond_noise.max().item() <= 1, f"{name}: fp8 codes differ by up to {beyond_noise.max().item()} steps"
        unexplained = (beyond_noise > 0).sum().item()
        if unexplained and oracle_rows is not None:
            unexplained -= _proven_ties(name, q, rq, beyond_noise > 0, oracle_rows)
        mismatch = unexplained / q.numel()
        assert mismatch <= MAX_CODE_MISMATCH, f"{name}: {mismatch:.2e} of fp8 codes differ from the reference, not at a rounding tie"


def documented_quotient(v, scales, group: int, fp8_max: float):
    """v / scale as the kernel computes it, exactly (float64): the scale and its reciprocal rounded to fp32,
    their product with the fp32 value rounded to fp32 (exact in float64: 24 + 24 bits), clamped to fp8_max;
    the fp8 code is the one nearest to that. `scales` holds one per `group` columns."""
    inverse = (1.0 / scales.float().double()).float().double().repeat_interleave(group, dim=1)
    return (v.float().double() * inverse).float().double().clamp(-fp8_max, fp8_max)


def _requantized(q, scale, rq, rscale, ties, oracle_rows):
    """The reference's codes, scales and oracle where the scales are a proven tie (_scale_ties): those groups
    quantised the oracle's way with the kernel's scale, so that the kernel's codes there are held to the
    same one-step rule as everywhere else."""
    import torch

    rows = ties.any(dim=1).nonzero()[:, 0]
    oracle = oracle_rows(rows.cpu())
    group = q.shape[1] // scale.shape[1]
    unrounded = documented_quotient(oracle["quant_input"], scale[rows].double().cpu(), group, torch.finfo(q.dtype).max)
    tied = ties[rows].repeat_interleave(group, dim=1)
    rq, rscale = rq.clone(), torch.where(ties, scale, rscale)
    rq[rows] = torch.where(tied, unrounded.to(q.device).float().to(q.dtype), rq[rows])
    requantized = torch.where(tied.cpu(), unrounded, oracle["q_unrounded"])

    def with_kernel_scales(asked):
        found = oracle_rows(asked)
        at = {row: i for i, row in enumerate(rows.tolist())}
        for i, row in enumerate(asked.tolist()):
            if row in at:
                found["q_unrounded"][i] = requantized[at[row]]
        return found

    return rq, rscale, with_kernel_scales


def _proven_ties(name, q, rq, differs, oracle_rows) -> int:
    """How many differing codes in the first TIE_ROWS_CHECKED rows with any are rounding ties of the exact
    quotient; a differing code there that is not one fails at once."""
    import torch

    rows = differs.any(dim=1).nonzero()[:TIE_ROWS_CHECKED, 0]
    exact = oracle_rows(rows.cpu())["q_unrounded"].to(q.device)
    checked = differs[rows]
    midpoint = (q[rows].double() + rq[rows].double()) / 2
    # In scaled units the group's fp32 noise (see Fp8Codes) is fp8_max · FP32_NOISE: it bounds where a
    # value that cancelled to near zero may sit.
    window = TIE_WINDOW * midpoint.abs() + torch.finfo(q.dtype).max * FP32_NOISE
    far = checked & ((exact - midpoint).abs() > window)
    if far.any():
        r, c = far.nonzero()[0].tolist()
        raise AssertionError(
            f"{name}: code {q[rows[r], c].item()} against the reference's {rq[rows[r], c].item()} at row {rows[r].item()}, column {c}: "
            f"the exact quotient {exact[r, c].item()!r} is not at their rounding midpoint"
        )
    return checked.sum().item()


def _outside_brackets(expression: str) -> str:
    """`expression` with every bracketed index's contents dropped, innermost first."""
    while (inner := re.sub(r"\[[^\[\]]*\]", "", expression)) != expression:
        expression = inner
    return expression


def check_cuda(source: str, schedule: Schedule) -> list[Check]:
    paired = "__nv_cvt_float2_to_fp8x2" in source
    scalar = len(re.findall(r"__nv_cvt_float_to_fp8\(", source))
    if schedule.vector_elems == 1:
        checks = [Check("fp8 convert paired", True, "scalar as planned (one element per access)")]
    else:
        checks = [Check("fp8 convert paired", paired and not scalar, f"paired converts: {paired}, scalar converts: {scalar}")]
    checks.append(row_access(source, "Q", min(16, schedule.vector_elems * DTYPE_BYTES["float8_e4m3fn"]), "fp8 stores"))
    # The kernel does not clamp before converting (_quantize): every conversion must saturate. Paired
    # conversions name their mode; a scalar one is a cast to TileLang's fp8 type, which converts through
    # CUTLASS's float_e4m3_t/float_e5m2_t::from_float, on sm_90 `cvt.rn.satfinite` (seen when a thread
    # holds an odd number of a group's values, e.g. 3072 columns over 1024 threads).
    intrinsic = len(re.findall(r"__nv_cvt_float2?_to_fp8", source))
    saturating = len(re.findall(r"__nv_cvt_float2?_to_fp8\w*\([^;]*__NV_SATFINITE", source))
    scalar_casts = len(re.findall(r"\(\(fp8_e[45]_t\)\(", source))
    checks.append(
        Check(
            "fp8 convert saturates",
            intrinsic + scalar_casts > 0 and saturating == intrinsic,
            f"{saturating} of {intrinsic} paired conversions with __NV_SATFINITE, {scalar_casts} scalar casts (satfinite on sm_90)",
        )
    )
    # The amax folds |x| (_magnitudes): a max of x and its negation is three instructions per element.
    magnitudes = "fabsf(" in source
    negated = len(re.findall(r"max\([^;]*\(0x0p\+0f[^;]*- row\[", source))
    checks.append(Check("amax of |x|", magnitudes and not negated, f"fabsf: {magnitudes}, max(x, 0 - x) steps: {negated}"))
    # The scale is the quotient by two fmas (_quotient): nvcc's division would bring back its branch. An index's
    # integer division (a block row's warps, threadIdx.x / 160, where its threads are no power of two) is none.
    fmas = len(re.findall(r"__fmaf_rn\(", source))
    divisions = sum(" / " in _outside_brackets(value) for value in re.findall(r"group_scale\[[^\]]*\] = ([^;]*);", source))
    checks.append(
        Check("scale by fmas, no division", fmas >= 2 and not divisions, f"fmas: {fmas}, divisions into group_scale: {divisions}")
    )
    return checks


class QuantFP8(Op[QuantFP8Spec]):
    kind = "quant_fp8"
    spec = QuantFP8Spec
    place = QUANTIZE
    transforms_row = False
    outputs = (
        OutputDecl("q", None, "the quantised row", Fp8Codes(), fp8=True),
        OutputDecl("scale", None, "the dequantisation scale per group", GroupScales()),
    )
    # Group amaxes combine inside a warp (no exchange to share); a per-token amax crosses the warps.
    joint = JointReduction(
        provides_factor=False, applies=_per_token, partial=ROW_AMAX, emit_partial=emit_amax_partial, emit_finish=_quantize, when="per-token"
    )
    readme_keys = (
        '`group_size` (a multiple of 8 dividing hidden, or `"token"`), `fp8` = `e4m3fn` (max 448) \\| `e5m2` (max 57344), '
        "`scale` = `fp32` \\| `ue8m0` (rounded up to a power of two), `amax_floor` (fp8_max · 2⁻¹²⁶ ≤ amax_floor ≤ 1: e4m3fn "
        "≥ 5.27e-36, e5m2 ≥ 6.74e-34; default 1e-10), `scale_layout` = `row` (Scale (M, G) contiguous) \\| `column` (an (M, G) "
        "view with strides (1, ⌈M/4⌉·4): column-major, tokens padded to 16 bytes, the layout DeepGEMM-style FP8 GEMMs read with TMA; "
        "per-token too, G = 1)"
    )
    check = staticmethod(check)
    plan = staticmethod(plan)
    emit_kernel = staticmethod(emit_kernel)
    emit_reference = staticmethod(emit_reference)

    def columns_multiple_of(self, op: QuantFP8Spec, ctx: ChainContext) -> int:
        return 1 if op.group_size == "token" else op.group_size

    def sector_rows(self, op: QuantFP8Spec, ctx: ChainContext) -> tuple[int, str] | None:
        if op.scale_layout != "column" or op.group_size == "token" or op.group_size > SECTOR_ROWS_MAX_GROUP:
            return None
        return SECTOR_BYTES // SCALE_BYTES, (
            f"column-major scales in groups of {op.group_size}: a group's scales of consecutive rows are adjacent, "
            f"and {SECTOR_BYTES // SCALE_BYTES} of them fill a {SECTOR_BYTES}-byte sector that one row a block writes "
            f"{SCALE_BYTES} bytes of"
        )

    def shares_one_vector_rows(self, op: QuantFP8Spec, ctx: ChainContext) -> str | None:
        return (
            "a row quantised to FP8 that one warp holds in one 16-byte vector a lane ran faster on half a warp, two "
            "vectors a lane (perf/probe104: 1.10 × on 15 held-out rows, none slower by more than 1 %)"
        )

    def needs_whole_row(self, op: QuantFP8Spec, ctx: ChainContext) -> str | None:
        return 'takes one scale from the amax of the whole row (group_size = "token")' if op.group_size == "token" else None

    def oracle_step(self, v, op, inputs, head_dim):
        m, n = v.shape
        g = n if op["group_size"] == "token" else op["group_size"]
        fp8_max = FP8_MAX[op["fp8"]]
        scales = v.new_empty(m, n // g)
        unrounded_scales = v.new_empty(m, n // g)
        for k in range(n // g):
            amax = v[:, k * g : (k + 1) * g].abs().amax(dim=1).clamp_min(op["amax_floor"])
            scale = unrounded_scales[:, k] = amax / fp8_max
            if op["scale"] == "ue8m0":
                scale = v.new_tensor([2.0 ** math.ceil(math.log2(s)) for s in scale.tolist()])
            scales[:, k] = scale
        unrounded = documented_quotient(v, scales, g, fp8_max)
        return v, {"scale": scales, "q_unrounded": unrounded, "scale_unrounded": unrounded_scales, "quant_input": v}

    def cuda_checks(self, stage: Stage, source: str, schedule: Schedule) -> list[Check]:
        checks = check_cuda(source, schedule)
        if stages_scales(stage):
            # Consecutive threads store a group's consecutive rows, read back from shared memory (a cast of
            # the dynamic shared buffer, or the buffer itself where it is the kernel's only one); with the
            # tokens pinned, Scale's stride is a number and TileLang stores a thread's adjacent rows as one vector.
            staged = len(re.findall(rf"{access('Scale')} = {access(STAGED_SCALES)}", source))
            direct = len(re.findall(rf"{access('Scale')} = {access('group_scale')}", source))
            checks.append(
                Check("column scales staged", staged > 0 and not direct, f"stores from {STAGED_SCALES}: {staged}, from registers: {direct}")
            )
        return checks

    def small_variant(self, op, small, full):
        if op["group_size"] == "token":
            return op
        fitting = math.gcd(op["group_size"], small.hidden)
        return {**op, "group_size": fitting if fitting >= MIN_GROUP else "token"}


OP = register(QuantFP8())
