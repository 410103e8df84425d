"""Rotary position embedding on a span of rope_dim columns. cos/sin come per token (float32, (M,
rope_dim/2)), or from a cos_sin_cache (max_position, rope_dim) float32 at each token's position: cos in
the first rope_dim/2 columns, sin in the rest, the layout of vLLM's RotaryEmbedding.cos_sin_cache.

neox pairs column p with p + rope_dim/2; gptj pairs 2p with 2p + 1 (DeepSeek MLA's tail RoPE is gptj).
"""

from __future__ import annotations

import math
import re
from typing import Literal

from pydantic import Field

from ..codegen import HEAD_DIM, TILE, KernelFrame, all_of, indent, shape_source
from ..cuda_checks import Check
from ..model import DTYPE_BYTES, WARP_LANES, Constant, Dim, Extent, Layout, Schedule, Scratch, Stage, Tensor, parts_of, rendered
from . import ROTATE, ChainContext, Op, OpSpec, added_key, described, head_dim_constant, kind_field, register

ALL_LANES = (1 << WARP_LANES) - 1
# The seed's small shape rotates 32 columns (of 256), from a cache of at most 64 positions.
SMALL_ROPE_DIM = 32
SMALL_MAX_POSITION = 64
# 2^24 positions: above the longest context a model serves (10M tokens, Llama 4 Scout), and the bound
# at which a float32 still holds every position exactly (cos_sin_cache is built from p · θ in fp32).
MAX_POSITION = 1 << 24
# The cache's element index max_position × rope_dim must fit int32: TileLang's buffer shapes and
# flattened indices are int32 (the position itself is read as int64, so p × rope_dim is int64 math).
MAX_CACHE_ELEMENTS = 2**31 - 1
# The base of the angles θ_j = base^(-2j/d) of the test cache (Llama's 10000; Qwen3 uses 1e6).
SAMPLE_ROPE_BASE = 10000.0


class RopeSpec(OpSpec):
    kind: Literal["rope"] = kind_field("rope")
    rope_dim: int = Field(
        gt=0,
        description="an even integer from 2 to hidden",
        json_schema_extra=described("Columns rotated, an even integer from 2 to hidden; cos and sin are (M, rope_dim/2) float32."),
    )
    span: Literal["tail", "head"] = Field(
        default="tail", json_schema_extra=described("Which rope_dim columns rotate: tail = the last ones, head = the first ones.")
    )
    style: Literal["neox", "gptj"] = Field(
        default="neox", json_schema_extra=described("Pairs rotated together: neox = (p, p + rope_dim/2), gptj = (2p, 2p+1).")
    )
    source: Literal["per_token", "cache"] = Field(
        **added_key("per_token"),
        json_schema_extra=described(
            "Where cos/sin come from: per_token = inputs cos, sin (M, rope_dim/2) float32; cache = inputs positions (M,) int64 "
            "and cos_sin_cache (max_position, rope_dim) float32, cos in the first half of a row, sin in the second (vLLM's layout)."
        ),
    )
    max_position: int | None = Field(
        **added_key(None),
        ge=1,
        le=MAX_POSITION,
        description=f"an integer from 1 to {MAX_POSITION} (2^24)",
        json_schema_extra=described('Rows of cos_sin_cache (source = "cache"): positions lie in [0, max_position).'),
    )


def check(op: RopeSpec, ctx: ChainContext) -> list[tuple[str, str]]:
    problems = []
    if op.rope_dim % 2:
        problems.append(("rope_dim", f"must be even (columns rotate in pairs), got {op.rope_dim}"))
    if ctx.head_dim is not None and op.rope_dim > ctx.head_dim:
        problems.append(("rope_dim", f"must be at most head_dim = {ctx.head_dim} (RoPE rotates inside every head), got {op.rope_dim}"))
    elif op.rope_dim > ctx.hidden:
        problems.append(("rope_dim", f"must be at most hidden = {ctx.hidden}, got {op.rope_dim}"))
    if op.source == "cache" and op.max_position is None:
        problems.append(
            ("max_position", 'is required with source = "cache": the rows of cos_sin_cache (positions lie in [0, max_position))')
        )
    if op.source == "per_token" and op.max_position is not None:
        problems.append(
            ("max_position", 'applies to source = "cache" only (the rows of cos_sin_cache); with per-token cos and sin there is no cache')
        )
    if op.max_position is not None and op.max_position * op.rope_dim > MAX_CACHE_ELEMENTS:
        problems.append(
            (
                "max_position",
                f"times rope_dim must be at most 2^31 − 1 (the cache's element index is int32 in TileLang): {op.max_position} × "
                f"{op.rope_dim} = {op.max_position * op.rope_dim}; at most {MAX_CACHE_ELEMENTS // op.rope_dim} positions at rope_dim {op.rope_dim}",
            )
        )
    return problems


def span_start(op_params: dict, width: int) -> int:
    """The span's first column within a row of `width` columns (a head's, with head_dim)."""
    return width - op_params["rope_dim"] if op_params["span"] == "tail" else 0


def rotated_width(params: dict, hidden: int) -> int:
    """The columns one span sits in: a head, or the row."""
    return params.get("head_dim") or hidden


def span_columns(params: dict, hidden: int) -> list[int]:
    """Every rotated column of the row, each span in order (one per head with head_dim)."""
    width = rotated_width(params, hidden)
    start = span_start(params, width)
    return [h * width + start + k for h in range(hidden // width) for k in range(params["rope_dim"])]


def is_cached(op_params: dict) -> bool:
    """Whether a spec's JSON form or a stage's params read cos/sin from the cache (a per-token RoPE
    carries no source key: RopeSpec's serialiser)."""
    return op_params.get("source") == "cache"


def angle_inputs(op: RopeSpec, spans: int) -> tuple[Tensor, ...]:
    """The kernel inputs cos/sin come from, in the contract's order, for a row of `spans` rotated spans."""
    if op.source == "cache":
        return (
            Tensor(
                "Positions",
                "positions",
                "int64",
                (Dim(tokens=True),),
                "input",
                f"each token's position, its row of cos_sin_cache, in [0, {op.max_position})",
            ),
            Tensor(
                "CosSinCache",
                "cos_sin_cache",
                "float32",
                (Dim(size=op.max_position), Dim(size=Extent(op.rope_dim, "ROPE_DIM"))),
                "input",
                "cos(θ) per position and pair in the first rope_dim/2 columns, sin(θ) in the rest; read at the tokens' positions only",
                index="Positions",
                spans=spans,
            ),
        )
    half = Extent(op.rope_dim // 2, HALF)
    return tuple(
        Tensor(
            param,
            param.lower(),
            "float32",
            (Dim(tokens=True), Dim(size=half)),
            "input",
            f"{param.lower()}(θ) per token and pair",
            spans=spans,
        )
        for param in ("Cos", "Sin")
    )


def plan(op: RopeSpec, index: int, ctx: ChainContext) -> Stage:
    params = {"rope_dim": op.rope_dim, "span": op.span, "style": op.style}
    if op.source == "cache":
        params |= {"source": op.source, "max_position": op.max_position}
    if ctx.head_dim is not None:
        params |= {"head_dim": ctx.head_dim, "heads": ctx.heads}
    start = span_start(params, rotated_width(params, ctx.hidden))
    params |= {"loop": rope_loop(params, ctx.layout)}
    shuffle = shuffle_pairing(params, ctx.layout)
    if pairs_in_registers(params, ctx.layout):
        params |= {"pairing": "registers"}
        scratch = (_partner_scratch(ctx, "each column's partner, signed, read from the same thread's vector"),)
        decision = (
            "pairing: in registers. Every gptj pair (2p, 2p+1) of the span lies in one thread's vector (the vectors hold an "
            "even number of columns and every pair starts at an even column), so each thread turns its own pairs: "
            "no shuffle, no shared memory, no barrier."
        )
    elif shuffle is not None:
        lanes, mask = shuffle
        params |= {"pairing": "shuffle", "partner_lanes": lanes, "lane_mask": mask}
        # Over the row or the span's tiles, every lane shuffles into rope_partner first, outside any branch
        # on the span.
        every_lane = params["loop"] != "span"
        through_partner = every_lane and branches_on_span(params, ctx.layout)
        scratch = (_partner_scratch(ctx, "each column's partner by warp shuffle, signed"),) if through_partner else ()
        which_lanes = "on every lane" if every_lane else "among the span's lanes"
        decision = (
            f"pairing: warp shuffle, partners {lanes} lanes apart. The span lies in one tile of the row layout, one vector "
            "per thread at the same register index, its threads aligned in one warp, so each value swaps with its partner's "
            f"by __shfl_xor_sync {which_lanes}: no shared memory, no barrier."
        )
    else:
        params |= {"pairing": "shared"}
        scratch = (
            Scratch(
                "rope_span",
                "shared",
                ctx.rows(_span_buffer_width(op.rope_dim, ctx)),
                "float32",
                "the span's values, so each thread can read its partner",
                barrier=True,
            ),
        )
        decision = (
            "pairing: shared-memory round trip of the span only (rope_dim floats per row, one barrier). Partners sit in "
            "different threads of the row fragment that a warp shuffle cannot pair here (gptj pairs split across "
            "vectors of one element; a neox span across tiles, warps or unaligned lanes), and registers cannot be read "
            "across threads."
        )
    where = f" of each of {ctx.heads} heads of {ctx.head_dim}" if ctx.head_dim else ""
    head_constants = (head_dim_constant(ctx.head_dim),) if ctx.head_dim else ()
    return Stage(
        index=index,
        kind="rope",
        summary=f"RoPE({op.style}, {op.span} {op.rope_dim} columns [{start}, {start + op.rope_dim}){where})",
        params=params,
        inputs=angle_inputs(op, ctx.heads),
        scratch=scratch,
        decisions=(decision,),
        constants=(
            *head_constants,
            Constant("ROPE_START", start, "RoPE: the span's first column" + (" in each head" if ctx.head_dim else "")),
            Constant("ROPE_DIM", op.rope_dim, "RoPE: the span's width"),
            Constant("ROPE_HALF", op.rope_dim // 2, "RoPE: its pairs, the columns of cos and sin, the distance of neox partners"),
        ),
    )


def _span_buffer_width(rope_dim: int, ctx: ChainContext) -> Extent:
    """The shared span copy's width: one span, or the span of every head the block holds side by side."""
    heads = ctx.block_hidden // ctx.head_dim if ctx.head_dim else 1
    return Extent(heads * rope_dim, "ROPE_DIM" if heads == 1 else f"{rendered(ctx.block_hidden)} // {HEAD_DIM} * ROPE_DIM")


def _partner_scratch(ctx: ChainContext, why: str) -> Scratch:
    return Scratch("rope_partner", "fragment", ctx.rows(ctx.padded_hidden), "float32", why)


def span_loops_fit(rope_dim: int, start: int, threads: int, vector: int) -> bool:
    """Whether TileLang lays out loops over the row's one span alone (rope_dim columns from column `start`)
    on a row layout of `threads` (those of one block row) × `vector`-column vectors. Seen failing
    otherwise: a span inside one thread's vector (rope_dim 8 at 8-element vectors), and a span that wraps
    from the end of a tile to the start of the next (rope_dim 128 at columns 72..199 of 128-column tiles)."""
    tile = threads * vector
    whole_vectors = rope_dim % vector == 0 and rope_dim // vector >= 2
    within_tile = start % tile + rope_dim <= tile or (start % tile == 0 and rope_dim % tile == 0)
    return whole_vectors and within_tile


def rope_loop(params: dict, layout: Layout) -> str:
    """How the RoPE's loops cover its columns:
    - "row": one loop over the whole row, each column checking whether it lies in a span: per head (a span
      in every head), or on a block of several rows, where a loop over the span alone covers a few threads
      of each row's warps, a thread set TileLang's layout inference cannot invert ("Could not normalize
      iterators");
    - "tiles": the row's one span where loops over it alone do not fit the row layout (span_loops_fit):
      a loop over the row tiles holding it, each column checked, so a short span (rope_dim 2) does not
      narrow the whole row's vectors to its own width, and costs a check on the few columns of those tiles;
    - "span": loops over the span alone."""
    if "head_dim" in params or layout.block_m > 1:
        return "row"
    return "span" if span_loops_fit(params["rope_dim"], span_start(params, layout.hidden), layout.threads, layout.vector) else "tiles"


def _row_span_start(op: RopeSpec, ctx: ChainContext) -> int:
    """The first column of the row's one span (a spec without head_dim)."""
    return span_start({"rope_dim": op.rope_dim, "span": op.span}, ctx.hidden)


# Where loops over the span alone hold it on 8-byte vectors, a row on 16-byte ones (its span turned in its
# tiles) did not pay: 0.73–1.06 × the 8-byte row (geometric mean 0.95; bf16 3200 LayerNorm → cache RoPE 8
# 0.75 → 0.54 × copy at 181 registers against 127); where only 2- or 4-byte vectors held it, 16 bytes ran
# 0.81–4.28 × as fast (12 of 19 faster, 5 even; bf16 8192 add → LayerNorm → rescale → RoPE 2 → FP8 0.20 → 0.84;
# perf/probe55).
SPAN_LOOPS_ENOUGH_VECTOR_BYTES = 8


def layout_refusal(op: RopeSpec, ctx: ChainContext, vector: int, threads: int) -> str | None:
    """Every row layout turns the span (rope_loop: in its row tiles where loops over it alone do not fit),
    except wider vectors than SPAN_LOOPS_ENOUGH_VECTOR_BYTES for a row's one span that loops over it alone
    hold on vectors of that width and not on the wider ones: it would turn in its tiles there, which ran
    slower than the narrower vectors."""
    elem = DTYPE_BYTES[ctx.dtype]
    if ctx.head_dim or vector * elem <= SPAN_LOOPS_ENOUGH_VECTOR_BYTES:
        return None
    start = _row_span_start(op, ctx)
    enough = SPAN_LOOPS_ENOUGH_VECTOR_BYTES // elem
    if span_loops_fit(op.rope_dim, start, threads, vector) or not span_loops_fit(op.rope_dim, start, threads, enough):
        return None
    return (
        f"its span [{start}, {start + op.rope_dim}) turns in loops over it alone on {SPAN_LOOPS_ENOUGH_VECTOR_BYTES}-byte vectors, "
        f"and would turn in the row's tiles on {vector * elem}-byte ones, which ran slower (perf/probe55)"
    )


# The row tiles holding the span of a "tiles" loop (rope_loop), which a program factory derives from its
# thread count as it derives its chunks (emit: factory-level names, each after those it uses).
SPAN_TILES = {
    "rope_tiles_start": "ROPE_START // ({row_threads} * vector) * ({row_threads} * vector)  # the row tile holding the RoPE span's first column",
    "rope_tiles_columns": (
        "-(-(ROPE_START + ROPE_DIM - rope_tiles_start) // ({row_threads} * vector)) * ({row_threads} * vector)"
        "  # the columns of the row tiles holding the span"
    ),
}


def branches_on_span(params: dict, layout: Layout) -> bool:
    """Whether a loop over the row or its span's tiles (rope_loop) passes columns outside every span (a
    span shorter than its head or row, or padding columns), so that it rotates a column only where a
    condition holds: TileLang turns that select into a branch."""
    if params["loop"] == "tiles":
        return True  # a span that filled its tiles would fit the loops over it alone (span_loops_fit)
    return params["rope_dim"] != rotated_width(params, layout.hidden) or layout.pads_columns


def shuffle_pairing(params: dict, layout: Layout | None) -> tuple[int, int] | None:
    """(how many lanes apart neox partners sit, the mask of the lanes holding span columns) when one
    warp shuffle pairs every span column with its partner; None otherwise.

    The pinned row layout (model.Layout) gives each block row whole warps of its own, and their thread
    t `vector` contiguous columns of every row tile. A column and its partner half a span away pair by
    XOR of the lane index when both sit in the same tile at the same register index, on threads whose
    indices differ in exactly the partner-distance bit; that is checked for every span column of the
    first row (the others are the same lanes of other warps). A single span's shuffle runs in a branch
    only its lanes take, so its mask must be exactly those lanes, the same in every warp and tile (or
    there is no single mask to give); a loop over the row or the span's tiles (rope_loop) runs it on every lane."""
    if layout is None or params["style"] != "neox":
        return None
    half, vector = params["rope_dim"] // 2, layout.vector
    if half % vector:
        return None
    lanes = half // vector
    if lanes & (lanes - 1) or 2 * lanes > WARP_LANES:
        return None
    columns = span_columns(params, layout.hidden)
    masks: dict[tuple[int, int], int] = {}
    for k, column in enumerate(columns):
        first_half = k % params["rope_dim"] < half
        thread, index = layout.thread_and_index(0, column)
        if layout.thread_and_index(0, column + half if first_half else column - half) != (thread ^ lanes, index):
            return None
        if thread % (2 * lanes) >= lanes if first_half else thread % (2 * lanes) < lanes:
            return None
        warp = (index // vector, thread // WARP_LANES)
        masks[warp] = masks.get(warp, 0) | 1 << thread % WARP_LANES
    if rope_loop(params, layout) != "span":
        return lanes, ALL_LANES  # every lane shuffles (_emit_over_columns)
    if len(set(masks.values())) != 1:
        return None
    return lanes, next(iter(masks.values()))


def pairs_in_registers(params: dict, layout: Layout | None) -> bool:
    """Whether both columns of every gptj pair (2p, 2p+1) of every span sit in one thread's vector, in
    every row of the block: then a thread reads its partner from its own registers. Checked pair by pair
    on the pinned row layout (model.Layout.thread_and_index): a vector of one element, or a pair starting
    at an odd column, splits pairs across threads. An even first column also puts pair p at columns
    2p and 2p + 1 of the row, the pair view the kernel reads (_partner_from_registers)."""
    if layout is None or params["style"] != "gptj" or layout.vector < 2:
        return False
    first_columns = span_columns(params, layout.hidden)[::2]
    return all(
        column % 2 == 0 and layout.thread_and_index(row, column + 1) == (thread, index + 1)
        for row in range(layout.block_m)
        for column in first_columns
        for thread, index in (layout.thread_and_index(row, column),)
    )


HALF = "ROPE_HALF"


def _pair_terms(style: str, frame: KernelFrame) -> tuple[str, str]:
    """(partner value with its sign, cos/sin column) for span column j, read from the shared copy."""
    if style == "neox":
        return f"T.if_then_else(j < {HALF}, -rope_span[{frame.at(f'j + {HALF}')}], rope_span[{frame.at(f'j - {HALF}')}])", f"j % {HALF}"
    return f"T.if_then_else(j % 2 == 0, -rope_span[{frame.at('j + 1')}], rope_span[{frame.at('j - 1')}])", "j // 2"


def _cos_sin(stage: Stage, frame: KernelFrame, pair: str) -> tuple[str, str]:
    if is_cached(stage.params):
        return (
            frame.row_param("CosSinCache", pair, index="Positions"),
            frame.row_param("CosSinCache", f"{HALF} + {pair}", index="Positions"),
        )
    return frame.row_param("Cos", pair), frame.row_param("Sin", pair)


def emit_kernel(stage: Stage, frame: KernelFrame) -> list[str]:
    if stage.params["loop"] != "span":
        return _emit_over_columns(stage, frame)
    return _emit_span(stage, frame, "ROPE_START", "ROPE_START // 2")


def emit_tile(stage: Stage, frame: KernelFrame) -> list[str]:
    """Variant reread: spans in every head turn in every tile (a tile holds whole heads, tile_rule); the
    row's one span, at its head or tail, in the first or last tile, where it starts at the tile's first
    column or ROPE_DIM before its end. Its buffers are declared before the branch."""
    if stage.params["loop"] == "row":
        return _emit_over_columns(stage, frame)
    width, tiles = frame.width, rendered(frame.layout.parts)
    if stage.params["span"] == "tail":
        lines = _emit_span(stage, frame, f"{width} - ROPE_DIM", f"{width} // 2 - {HALF}")
        tile = f"{tiles} - 1"
    else:
        lines = _emit_span(stage, frame, "0", "0")
        tile = "0"
    planned = {b.name for b in frame.buffers}
    declarations = [frame.alloc(name) for name in ("rope_partner", "rope_span") if name in planned]
    declarations += [frame.pin_row_layout("rope_partner")] if "rope_partner" in planned else []
    return [
        *(line for line in lines if line in declarations),
        f"if {TILE} == {tile}:",
        *indent([line for line in lines if line not in declarations], 4),
    ]


def _emit_span(stage: Stage, frame: KernelFrame, start: str, first_pair: str) -> list[str]:
    """The loops over the span alone, which starts at row column `start` (pair `first_pair`)."""
    partner, pair = _pair_terms(stage.params["style"], frame)
    cos, sin = _cos_sin(stage, frame, pair)
    column = "j" if start == "0" else f"{start} + j"
    value = f"row[{frame.at(column)}]"
    if frame.one_row:
        each_span_column = f"for j in T.Parallel(ROPE_DIM, loop_layout=on_row_threads(ROPE_DIM, {start})):"
        each_pair = f"for p in T.Parallel({HALF}, loop_layout=on_row_threads({HALF}, {start}, 2)):"
    else:
        each_span_column = f"for i, j in T.Parallel({frame.bm}, ROPE_DIM):"
        each_pair = f"for i, p in T.Parallel({frame.bm}, {HALF}):"
    if stage.params["pairing"] == "registers":
        return [
            *_partner_from_registers(stage, frame, each_pair, "" if first_pair == "0" else first_pair),
            each_span_column,
            f"    {value} = {value} * {cos} + rope_partner[{frame.at(column)}] * {sin}",
        ]
    if stage.params["pairing"] == "shuffle":
        # The sign is a factor, not a select around the shuffle: every lane of the mask must execute it.
        swapped = f"T.shfl_xor({value}, {stage.params['partner_lanes']}, {WARP_LANES}, {stage.params['lane_mask']:#x})"
        return [
            *_sign_comment(stage),
            each_span_column,
            f"    {value} = {value} * {cos} + {swapped} * T.if_then_else(j < {HALF}, -1.0, 1.0) * {sin}",
        ]
    return [
        frame.alloc("rope_span"),
        each_span_column,
        f"    rope_span[{frame.at('j')}] = {value}",
        *_sign_comment(stage),
        each_span_column,
        f"    {value} = rope_span[{frame.at('j')}] * {cos} + {partner} * {sin}",
    ]


def _sign_comment(stage: Stage) -> list[str]:
    first_of_pair = "the first half of the span" if stage.params["style"] == "neox" else "even columns"
    return [
        "# Each pair (a, b) turns by θ: a' = a·cos − b·sin, b' = b·cos + a·sin. So the partner's value is",
        f"# taken with −sin where this column is a ({first_of_pair}) and +sin where it is b.",
    ]


def _partner_fragment(stage: Stage, frame: KernelFrame) -> list[str]:
    """rope_partner in the row's layout: each column's partner, −b at a and +a at b. A second fragment,
    not an update of `row` in place: the pair's first column would be overwritten before its partner
    reads it."""
    return [frame.alloc("rope_partner"), frame.pin_row_layout("rope_partner"), *_sign_comment(stage)]


def _partner_from_registers(stage: Stage, frame: KernelFrame, each_pair: str, first_pair: str = "") -> list[str]:
    """rope_partner filled pair by pair (`each_pair`: the loop header over pair p) from pair `first_pair`
    on. Pairs start at even columns (pairs_in_registers), so row and rope_partner viewed as (…, columns
    / 2, 2) hold pair p at [p, 0:2] of their row, and each loop reads one member and writes the other
    with the same pair index, which TileLang's layout inference proves thread-local (a column index like
    j // 2 * 2 + (1 - j % 2) it rejected as a layout conflict at some widths)."""
    shape = shape_source(frame.layout.rows(parts_of(frame.layout.padded_hidden, 2, "2"), 2))
    at = f"{first_pair} + p" if first_pair else "p"
    # Views written inline: a view bound to a name renames the fragment in the CUDA after it.
    row_pairs, partner_pairs = f"T.reshape(row, {shape})", f"T.reshape(rope_partner, {shape})"
    return [
        *_partner_fragment(stage, frame),
        each_pair,
        f"    {partner_pairs}[{frame.at(at, '0')}] = -{row_pairs}[{frame.at(at, '1')}]",
        each_pair,
        f"    {partner_pairs}[{frame.at(at, '1')}] = {row_pairs}[{frame.at(at, '0')}]",
    ]


def _emit_over_columns(stage: Stage, frame: KernelFrame) -> list[str]:
    """RoPE as one loop in the row's own layout over the whole row (rope_loop "row") or over the row tiles
    holding its one span (rope_loop "tiles": columns rope_tiles_start + j). Column c is column
    k = c % HEAD_DIM − ROPE_START of its head's span, or c − ROPE_START of the row's. (A loop over
    (heads, span) mapped onto the row failed TileLang's layout inference where heads do not tile the
    threads' columns evenly.)"""
    p = stage.params
    per_head = "head_dim" in p
    if p["loop"] == "tiles":
        column, extent, first_column = "rope_tiles_start + j", "rope_tiles_columns", "rope_tiles_start"
        loop = f"for j in T.Parallel({extent}, loop_layout=on_row_threads({extent}, {first_column})):"
        each_pair = f"for p in T.Parallel({extent} // 2, loop_layout=on_row_threads({extent} // 2, {first_column}, 2)):"
        first_pair = f"{first_column} // 2"
    else:
        column, loop = "j", frame.loop(("j", frame.columns))
        each_pair, first_pair = frame.loop(("p", rendered(parts_of(frame.layout.padded_hidden, 2, "2")))), ""
    k = f"({column} % {HEAD_DIM} - ROPE_START)" if per_head else f"({column} - ROPE_START)"
    neox = p["style"] == "neox"
    pair, first = (f"{k} % {HALF}", f"{k} < {HALF}") if neox else (f"{k} // 2", f"{k} % 2 == 0")
    cos, sin = _cos_sin(stage, frame, pair)
    conditions = [] if p["rope_dim"] == rotated_width(p, frame.hidden) else [f"0 <= {k}", f"{k} < ROPE_DIM"]
    if frame.layout.pads_columns and p["loop"] == "row":
        conditions.append(f"j < {frame.width}")  # padding columns would index past the span buffer
    in_span = all_of(conditions) if conditions else None

    element = f"row[{frame.at(column)}]"

    def rotated(value: str, partner: str) -> str:
        turned = f"{value} * {cos} + {partner} * {sin}"
        return turned if in_span is None else f"T.if_then_else({in_span}, {turned}, {element})"

    partner_of_element = f"rope_partner[{frame.at(column)}]"
    rotate = [loop, f"    {element} = {rotated(element, partner_of_element)}"]
    if p["pairing"] == "registers":
        return [*_partner_from_registers(stage, frame, each_pair, first_pair), *rotate]
    if p["pairing"] == "shuffle":
        # Every lane shuffles (columns outside the spans too, their partner unused), so the mask of all
        # lanes is exact; where the rotation branches on the span, the shuffle goes before the branch.
        swapped = f"T.shfl_xor({element}, {p['partner_lanes']}, {WARP_LANES}, {p['lane_mask']:#x})"
        sign = f"T.if_then_else({first}, -1.0, 1.0)"
        if not branches_on_span(p, frame.layout):
            return [*_sign_comment(stage), loop, f"    {element} = {rotated(element, f'{swapped} * {sign}')}"]
        return [*_partner_fragment(stage, frame), loop, f"    {partner_of_element} = {swapped} * {sign}", *rotate]
    at = frame.at(f"{column} // {HEAD_DIM} * ROPE_DIM + {k}" if per_head else k)
    distance = HALF if neox else "1"
    partner = f"T.if_then_else({first}, -rope_span[{at} + {distance}], rope_span[{at} - {distance}])"
    store = [f"    rope_span[{at}] = {element}"] if in_span is None else [f"    if {in_span}:", f"        rope_span[{at}] = {element}"]
    return [frame.alloc("rope_span"), loop, *store, *_sign_comment(stage), loop, f"    {element} = {rotated(f'rope_span[{at}]', partner)}"]


def emit_reference(stage: Stage, hidden: int) -> list[str]:
    dim = stage.params["rope_dim"]
    start = span_start(stage.params, rotated_width(stage.params, hidden))
    half = dim // 2
    gather = [f"cos, sin = cos_sin_cache[positions, :{half}], cos_sin_cache[positions, {half}:]"] if is_cached(stage.params) else []
    if stage.params["style"] == "neox":
        split = [f"first, second = span[..., :{half}], span[..., {half}:]"]
        join = "torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)"
    else:
        split = ["first, second = span[..., 0::2], span[..., 1::2]"]
        join = "torch.stack([first * cos - second * sin, second * cos + first * sin], dim=-1).flatten(-2)"
    if "head_dim" not in stage.params:
        return [*gather, f"span = v[:, {start}:{start + dim}]", *split, "v = v.clone()", f"v[:, {start}:{start + dim}] = {join}"]
    heads, head_dim = stage.params["heads"], stage.params["head_dim"]
    return [
        *gather,
        # Every head turns by its token's angles.
        "cos, sin = cos[:, None], sin[:, None]",
        "v = v.clone()",
        f"heads = v.view(v.shape[0], {heads}, {head_dim})",
        f"span = heads[:, :, {start}:{start + dim}]",
        *split,
        f"heads[:, :, {start}:{start + dim}] = {join}",
    ]


def check_pairing(source: str, params: dict, schedule: Schedule) -> Check:
    if params["pairing"] == "registers":
        # The partners are a per-thread array; any shared span would mean an exchange crept back in.
        in_registers = re.search(r"\bfloat rope_partner\[\d+\];", source) is not None
        return Check(
            "RoPE partners in registers",
            in_registers and re.search(r"\brope_span\b", source) is None,  # \b: not a kernel named rope_span_…
            "rope_partner a per-thread array, no shared span" if in_registers else "no per-thread rope_partner array",
        )
    if params["pairing"] == "shuffle":
        # The planned distance among exactly the span's lanes; a wider mask would wait on lanes that
        # never reach the shuffle, a narrower one reads undefined values.
        shuffle = rf"__shfl_xor_sync\(\(uint\){params['lane_mask']}, [^;]*, {params['partner_lanes']}, 32\)"
        found = len(re.findall(shuffle, source))
        ok = found > 0 and re.search(r"\brope_span\b", source) is None
        detail = f"{found} shuffle(s) over lanes {params['lane_mask']:#x}, {params['partner_lanes']} apart"
        if params["loop"] != "span":
            # Every lane shuffles (mask: all lanes), so no branch may keep a lane from it. (A span loop's
            # shuffle runs in the branch of the span's lanes, which its mask names.)
            branched = _shuffles_in_branches(source, shuffle)
            ok = ok and not branched
            detail += f", {branched} inside a branch" if branched else ", each outside any branch"
        return Check("RoPE partners by warp shuffle", ok, detail)
    # The span lives in dynamic shared memory (cast from the byte buffer) or in a static array.
    span = re.findall(r"\*\((float\d)\*\)\((?:\(\(float\*\)rope_span\)|rope_span) ", source)
    return Check(
        "RoPE span accesses contiguous",
        schedule.vector_elems == 1 or (bool(span) and all(t != "float1" for t in span)),
        f"{len(span)} vector access(es) to rope_span" if span else "rope_span accessed one float at a time",
    )


def _shuffles_in_branches(source: str, shuffle: str) -> int:
    """How many of the shuffles matching `shuffle` sit in a block that an `if` or `else` opened, at any
    depth (TileLang writes one statement per line, a block's opening brace on its opener's line)."""
    lines = source.splitlines()
    branched = 0
    for at, line in enumerate(lines):
        if not re.search(shuffle, line):
            continue
        depth, openers = 0, []
        for previous in reversed(lines[:at]):
            for brace in reversed(re.sub(r"[^{}]", "", previous)):
                depth += 1 if brace == "}" else -1
                if depth < 0:  # this line opens a block around the shuffle ("} else {" too)
                    openers.append(previous)
                    depth = 0
        branched += any(re.match(r"\s*(if \(|\} else|else)", opener) for opener in openers)
    return branched


def check_cache_gather(source: str) -> Check:
    """Every read of cos_sin_cache (a load or a cp.async) is addressed by the token's position, so the
    kernel reads the M rows the ledger counts, never the table by token index."""
    # An element load indexes the array; a vector load adds to its pointer.
    reads = [line for line in source.splitlines() if re.search(r"CosSinCache(\[| \+)", line)]
    gathered = [line for line in reads if "Positions[" in line]
    return Check(
        "RoPE cache read at the tokens' positions",
        bool(reads) and len(gathered) == len(reads),
        f"{len(gathered)} of {len(reads)} cos_sin_cache read(s) indexed by Positions",
    )


# A RoPE in every head whose neox partners swap by warp shuffle fewer lanes apart than this, or over a span
# shorter than the head (each value rotated behind a branch on the span), ran slower on four warps holding
# 36–64 values a thread than the planner's wider blocks or the stream (H200, 16384 tokens): QK-norm → cache
# RoPE with rope_dim 64 in 16-bit rows, partners four lanes apart, over heads of 64 0.75–0.84 × copy against
# the stream's 0.84–0.93, over the last 64 columns of heads of 128 0.58–0.68 against 0.75–0.84 (perf/probe29);
# eight lanes apart behind the branch, fp16 128 of heads of 256 0.78 against 0.94 streamed (perf/probe30
# g50), fp32 64 of 128 0.90–0.92 against 0.93–0.96 on 256 threads. Eight lanes apart over whole heads
# (rope_dim 128, or 64 in float32 rows) ran 0.90–0.98 on four warps (perf/probe27, probe29). Over whole
# heads the crowding is registers (ptxas gave the four-lane shuffles 168 a thread): a launch bound of five or
# six blocks squeezed them to 96 or 80 and heads of 64 ran 0.93–0.97 at 6144–8192 16-bit columns (perf/probe29,
# probe32), where behind the branch of a partial span the same bounds ran 0.41–0.66.
FEW_WARPS_MIN_PARTNER_LANES = 8


class Rope(Op[RopeSpec]):
    kind = "rope"
    spec = RopeSpec
    place = ROTATE
    transforms_row = True
    linear = True
    derived_extents = SPAN_TILES
    layout_refusal = staticmethod(layout_refusal)
    readme_keys = (
        "`rope_dim` (even, ≤ hidden; with the top-level `head_dim` ≤ head_dim: the span lies in every head, each head turned by "
        "its token's angles), `span` = `tail` (last rope_dim columns) \\| `head`, `style` = `neox` (pair p, p + d/2) "
        "\\| `gptj` (pair 2p, 2p+1), `source` = `per_token` (inputs cos, sin) \\| `cache` (inputs positions, cos_sin_cache), "
        "`max_position` (1 … 2²⁴, max_position · rope_dim < 2³¹; required with cache)"
    )
    check = staticmethod(check)
    plan = staticmethod(plan)
    emit_kernel = staticmethod(emit_kernel)
    emit_tile = staticmethod(emit_tile)
    emit_reference = staticmethod(emit_reference)

    def crowds_few_warps(self, stage: Stage) -> bool:
        lanes = stage.params.get("partner_lanes")
        in_every_head = "head_dim" in stage.params and lanes is not None
        return in_every_head and (lanes < FEW_WARPS_MIN_PARTNER_LANES or stage.params["rope_dim"] < stage.params["head_dim"])

    def bound_eases_few_warps(self, stage: Stage) -> bool:
        return self.crowds_few_warps(stage) and stage.params["rope_dim"] == stage.params["head_dim"]

    def tile_rule(self, op: RopeSpec, ctx: ChainContext, tile_columns: int) -> str | None:
        """A tile holds whole heads, each with its span; or, over the row, its one span (at the row's head or
        tail, and the row a whole number of tiles), which loops over the span alone lay out (span_loops_fit)."""
        if ctx.head_dim is not None:
            return (
                None
                if tile_columns % ctx.head_dim == 0
                else f"rotates a span in every head of {ctx.head_dim} columns, which a tile of {tile_columns} splits"
            )
        if op.rope_dim > tile_columns:
            return f"rotates {op.rope_dim} columns, more than a tile of {tile_columns} holds"
        # A tile finishes its span in loops over the span alone (emit_tile), on one 16-byte vector a thread.
        vector = 16 // DTYPE_BYTES[ctx.dtype]
        start = _row_span_start(op, ctx)
        if not span_loops_fit(op.rope_dim, start, tile_columns // vector, vector):
            return (
                f"rotates columns [{start}, {start + op.rope_dim}): a tile turns its span only where that covers two or more "
                f"whole {vector}-column vectors in one tile of {tile_columns}"
            )
        return None

    def needs_whole_row(self, op: RopeSpec, ctx: ChainContext) -> str | None:
        if ctx.head_dim is not None:
            return None  # a span in every head: a part of whole heads holds its spans whole
        return (
            f"rotates one span of the row (its {op.span} {op.rope_dim} columns), not one in every part (with head_dim: one in every head)"
        )

    def oracle_step(self, v, op, inputs, head_dim):
        d, n = op["rope_dim"], v.shape[1]
        width = head_dim or n
        cos, sin = self.angles(op, inputs)
        out = v.clone()
        for head_start in range(0, n, width):
            start = head_start + (width - d if op["span"] == "tail" else 0)
            for p in range(d // 2):
                a, b = (start + p, start + p + d // 2) if op["style"] == "neox" else (start + 2 * p, start + 2 * p + 1)
                out[:, a] = v[:, a] * cos[:, p] - v[:, b] * sin[:, p]
                out[:, b] = v[:, b] * cos[:, p] + v[:, a] * sin[:, p]
        return out, {}

    @staticmethod
    def angles(op, inputs):
        """(cos, sin) float64 (M, rope_dim/2): the inputs, or row positions[r] of the cache for token r."""
        import torch

        if not is_cached(op):
            return inputs["cos"].double(), inputs["sin"].double()
        half, cache, positions = op["rope_dim"] // 2, inputs["cos_sin_cache"].double(), inputs["positions"]
        rows = [cache[int(positions[r])] for r in range(positions.shape[0])]
        cos = torch.stack([row[:half] for row in rows]) if rows else cache.new_zeros((0, half))
        sin = torch.stack([row[half:] for row in rows]) if rows else cache.new_zeros((0, half))
        return cos, sin

    def sample_inputs(self, op, shapes, draw):
        """cos and sin of real angles, so each pair rotates without scaling. The cache holds a model's
        real table, cos(p·θ_j) | sin(p·θ_j) with θ_j = base^(-2j/d); positions are random, the first
        and last token at the cache's edges 0 and max_position − 1, where an off-by-one shows."""
        if not is_cached(op):
            angle = draw.uniform(shapes["cos"]) * (2 * math.pi)
            return {"cos": angle.cos(), "sin": angle.sin()}
        import torch

        rows, dim = shapes["cos_sin_cache"]
        theta = SAMPLE_ROPE_BASE ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
        angle = torch.arange(rows, dtype=torch.float64)[:, None] * theta
        positions = draw.integers(rows, shapes["positions"])
        if positions.numel():
            positions[0], positions[-1] = 0, rows - 1
        return {"positions": positions, "cos_sin_cache": torch.cat([angle.cos(), angle.sin()], dim=-1).float()}

    def cuda_checks(self, stage: Stage, source: str, schedule: Schedule) -> list[Check]:
        checks = [check_pairing(source, stage.params, schedule)]
        if is_cached(stage.params):
            checks.append(check_cache_gather(source))
        return checks

    def small_variant(self, op, small, full):
        # With heads, the small shape keeps head_dim, and so the rotary fraction of each head.
        small = op if small.head_dim else {**op, "rope_dim": SMALL_ROPE_DIM}
        if is_cached(op):
            small["max_position"] = min(op["max_position"], SMALL_MAX_POSITION)
        return small


OP = register(Rope())
