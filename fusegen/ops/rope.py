"""Rotary position embedding on a span of rope_dim columns, cos/sin given per token (float32, (M, rope_dim/2)).

neox pairs column p with p + rope_dim/2; gptj pairs 2p with 2p + 1 (DeepSeek MLA's tail RoPE is gptj).
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..codegen import KernelFrame
from ..model import Dim, Scratch, Stage, Tensor
from . import RANK_ROTATE, ChainContext, OpDef, OpSpec, register


class RopeSpec(OpSpec):
    kind: Literal["rope"]
    rope_dim: int = Field(gt=0, description="an even integer from 2 to hidden")
    span: Literal["tail", "head"] = "tail"
    style: Literal["neox", "gptj"] = "neox"


def check(op: RopeSpec, ctx: ChainContext) -> list[tuple[str, str]]:
    problems = []
    if op.rope_dim % 2:
        problems.append(("rope_dim", f"must be even (columns rotate in pairs), got {op.rope_dim}"))
    if op.rope_dim > ctx.hidden:
        problems.append(("rope_dim", f"must be at most hidden = {ctx.hidden}, got {op.rope_dim}"))
    return problems


def span_start(op_params: dict, hidden: int) -> int:
    return hidden - op_params["rope_dim"] if op_params["span"] == "tail" else 0


def plan(op: RopeSpec, index: int, ctx: ChainContext) -> Stage:
    half = op.rope_dim // 2
    cos_sin = tuple(
        Tensor(param, param.lower(), "float32", (Dim(tokens=True), Dim(size=half)), "input", f"{param.lower()}(θ) per token and pair")
        for param in ("Cos", "Sin")
    )
    params = {"rope_dim": op.rope_dim, "span": op.span, "style": op.style}
    start = span_start(params, ctx.hidden)
    return Stage(
        index=index,
        kind="rope",
        summary=f"RoPE({op.style}, {op.span} {op.rope_dim} columns [{start}, {start + op.rope_dim}))",
        params=params,
        inputs=cos_sin,
        scratch=(
            Scratch("rope_span", "shared", (ctx.block_m, op.rope_dim), "float32", "the span's values, so each thread can read its partner"),
        ),
        decisions=(
            "pairing: shared-memory round trip of the span only (rope_dim floats per row, one barrier pair). "
            "Partners sit in different threads of the row fragment (neox: rope_dim/2 columns apart; gptj: "
            "possibly split by the vector layout), and registers cannot be read across threads. Loading the two "
            "halves as separate fragments would put partners in one thread, but the rotated values must land "
            "back in the row fragment's layout for the group amax and the stores, which needs the same shared "
            "round trip, so it would add a second read of the span and save nothing.",
        ),
    )


def accepts_layout(op: RopeSpec, hidden: int, vector: int, threads: int) -> bool:
    """Whether TileLang can lay out the span loops on the pinned row layout (a tile is threads·vector
    columns). Seen failing otherwise: a span inside one thread's vector (rope_dim 8 at 8-element
    vectors), and a span that wraps from the end of a tile to the start of the next (rope_dim 128 at
    columns 72..199 of 128-column tiles)."""
    tile = threads * vector
    start = span_start({"rope_dim": op.rope_dim, "span": op.span}, hidden) % tile
    whole_vectors = op.rope_dim % vector == 0 and op.rope_dim // vector >= 2
    within_tile = start + op.rope_dim <= tile or (start == 0 and op.rope_dim % tile == 0)
    return whole_vectors and within_tile


def _pair_terms(style: str, half: int) -> tuple[str, str]:
    """(partner value with its sign, cos/sin column) for span column j, read from the shared copy."""
    if style == "neox":
        return f"T.if_then_else(j < {half}, -rope_span[i, j + {half}], rope_span[i, j - {half}])", f"j % {half}"
    return "T.if_then_else(j % 2 == 0, -rope_span[i, j + 1], rope_span[i, j - 1])", "j // 2"


def emit_kernel(stage: Stage, frame: KernelFrame) -> list[str]:
    dim = stage.params["rope_dim"]
    start = span_start(stage.params, frame.hidden)
    partner, pair = _pair_terms(stage.params["style"], dim // 2)
    cos, sin = frame.row_param("Cos", pair), frame.row_param("Sin", pair)
    return [
        f'rope_span = T.alloc_shared(({frame.bm}, {dim}), "float32")',
        f"for i, j in T.Parallel({frame.bm}, {dim}):",
        f"    rope_span[i, j] = row[i, {start} + j]",
        f"for i, j in T.Parallel({frame.bm}, {dim}):",
        f"    row[i, {start} + j] = rope_span[i, j] * {cos} + {partner} * {sin}",
    ]


def emit_reference(stage: Stage, hidden: int) -> list[str]:
    dim = stage.params["rope_dim"]
    start = span_start(stage.params, hidden)
    half = dim // 2
    if stage.params["style"] == "neox":
        split = [f"first, second = span[:, :{half}], span[:, {half}:]"]
        join = "torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)"
    else:
        split = ["first, second = span[:, 0::2], span[:, 1::2]"]
        join = "torch.stack([first * cos - second * sin, second * cos + first * sin], dim=-1).flatten(1)"
    return [
        f"span = v[:, {start}:{start + dim}]",
        *split,
        "v = v.clone()",
        f"v[:, {start}:{start + dim}] = {join}",
    ]


OP = register(
    OpDef(
        kind="rope",
        spec=RopeSpec,
        rank=RANK_ROTATE,
        transforms_row=True,
        check=check,
        plan=plan,
        emit_kernel=emit_kernel,
        emit_reference=emit_reference,
        accepts_layout=accepts_layout,
        linear=True,
    )
)
