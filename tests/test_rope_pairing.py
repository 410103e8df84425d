"""The RoPE pairing the planner picks: when it says a warp shuffle pairs the span, every column's
partner must be exactly the lane the shuffle reads, at the same register index, among the lanes of
the mask; when it says gptj pairs turn in registers, both columns of every pair must sit in one
thread at neighbouring register indices. Checked by walking the pinned row layout column by column
(codegen.KernelFrame), not by the planner's closed form."""

from __future__ import annotations

import itertools

import pytest

from fusegen.errors import ChainError
from fusegen.model import Layout
from fusegen.ops.rope import (
    SPAN_TILES,
    WARP_LANES,
    _shuffles_in_branches,
    pairs_in_registers,
    rope_loop,
    shuffle_pairing,
    span_loops_fit,
    span_start,
)
from fusegen.plan import plan
from fusegen.spec import KernelSpec


def thread_and_index(column: int, layout: Layout, row: int = 0) -> tuple[int, int]:
    """Block row `row` has threads row·r … row·r + r − 1 (r = threads / block_m), thread t of them
    `vector` contiguous columns of every r·vector."""
    row_threads = layout.threads // layout.block_m
    tile = row_threads * layout.vector
    return row * row_threads + column // layout.vector % row_threads, column // tile * layout.vector + column % layout.vector


def layouts():
    for threads, vector in itertools.product((32, 64, 96, 128, 224, 256, 512), (1, 2, 4, 8)):
        tile = threads * vector
        for hidden in (tile // 2, tile, tile + 8 * vector, 3 * tile - 2 * vector, 4000, 4096, 7168):
            if hidden >= 2 and hidden % vector == 0:
                yield Layout(1, hidden, -(-hidden // tile) * tile, threads, vector)


CONFIGURATIONS = [
    (layout, dim, span)
    for layout in layouts()
    for dim in (2, 4, 8, 16, 32, 64, 96, 128, 256, 512)
    for span in ("tail", "head")
    if dim <= layout.hidden
]


def test_shuffle_reads_exactly_the_partner_among_the_masked_lanes():
    shuffled = 0
    for layout, dim, span in CONFIGURATIONS:
        params = {"rope_dim": dim, "span": span, "style": "neox"}
        shuffle = shuffle_pairing(params, layout)
        if shuffle is None:
            continue
        lanes, mask = shuffle
        shuffled += 1
        start, half = span_start(params, layout.hidden), dim // 2
        span_threads = set()
        for k in range(dim):
            thread, index = thread_and_index(start + k, layout)
            partner = start + (k + half if k < half else k - half)
            assert thread_and_index(partner, layout) == (thread ^ lanes, index), (layout, dim, span, k)
            span_threads.add(thread)
        assert len({t // WARP_LANES for t in span_threads}) == 1, (layout, dim, span)
        assert mask == sum(1 << t % WARP_LANES for t in span_threads), (layout, dim, span)
    assert shuffled > 100, "too few layouts pair by shuffle for the check to mean anything"


@pytest.mark.parametrize(
    "layout, dim, lanes",
    [
        (Layout(1, 4096, 4096, 128, 8), 64, 4),  # the seed chains at 4096, 16-byte vectors
        (Layout(1, 4096, 4096, 64, 8), 64, 4),
        (Layout(1, 7168, 7168, 256, 4), 64, 8),  # 7168 on 8-byte vectors
        (Layout(1, 7168, 7168, 224, 8), 64, 4),
    ],
)
def test_the_example_chains_pair_by_shuffle(layout, dim, lanes):
    assert shuffle_pairing({"rope_dim": dim, "span": "tail", "style": "neox"}, layout)[0] == lanes


@pytest.mark.parametrize(
    "layout, params, why",
    [
        (Layout(1, 4096, 4096, 128, 8), {"rope_dim": 64, "span": "tail", "style": "gptj"}, "gptj pairs neighbours"),
        (Layout(1, 1000, 1024, 128, 8), {"rope_dim": 64, "span": "tail", "style": "neox"}, "span starts mid-group of lanes"),
        (Layout(1, 4096, 4096, 128, 8), {"rope_dim": 1024, "span": "tail", "style": "neox"}, "span over four warps"),
        (Layout(1, 4096, 4096, 128, 8), {"rope_dim": 8, "span": "tail", "style": "neox"}, "partners in one vector"),
    ],
)
def test_layouts_a_shuffle_cannot_pair_use_shared_memory(layout, params, why):
    assert shuffle_pairing(params, layout) is None, why


def gptj_configurations():
    """gptj spans, whole-row and per head, on blocks of one and several rows."""
    for layout, dim, span in CONFIGURATIONS:
        yield {"rope_dim": dim, "span": span, "style": "gptj"}, layout
        if layout.threads % 128 == 0:  # four rows of whole warps
            tile = layout.threads // 4 * layout.vector
            four_rows = Layout(4, layout.hidden, -(-layout.hidden // tile) * tile, layout.threads, layout.vector)
            yield {"rope_dim": dim, "span": span, "style": "gptj"}, four_rows
    for head_dim, heads in ((64, 4), (128, 8), (192, 8)):
        for threads, vector in itertools.product((32, 128, 256), (1, 2, 4, 8)):
            hidden = head_dim * heads
            for block_m in (1, 2) if threads > 32 else (1,):
                tile = threads // block_m * vector
                layout = Layout(block_m, hidden, -(-hidden // tile) * tile, threads, vector)
                for dim in (2, 32, 64, head_dim):
                    yield {"rope_dim": dim, "span": "tail", "style": "gptj", "head_dim": head_dim}, layout


def neighbours(row: int, column: int, layout: Layout) -> bool:
    """Whether a block row's `column` and the next are held by one thread at consecutive register indices."""
    thread, index = thread_and_index(column, layout, row)
    return thread_and_index(column + 1, layout, row) == (thread, index + 1)


def test_gptj_pairs_in_registers_exactly_where_each_pair_is_one_threads_neighbours():
    """Where the planner pairs in registers, the kernel reads each partner from the thread's own
    registers: both columns of every pair, in every row of the block, must sit in one thread at
    neighbouring register indices, the pair's first column even. Walked column by column."""
    in_registers = elsewhere = 0
    for params, layout in gptj_configurations():
        width = params.get("head_dim") or layout.hidden
        start = span_start(params, width)
        firsts = [h + start + 2 * p for h in range(0, layout.hidden, width) for p in range(params["rope_dim"] // 2)]
        held_together = all(c % 2 == 0 and neighbours(row, c, layout) for row in range(layout.block_m) for c in firsts)
        assert pairs_in_registers(params, layout) == held_together, (params, layout)
        in_registers += held_together
        elsewhere += not held_together
    assert in_registers > 100 and elsewhere > 10, "both outcomes must occur for the check to mean anything"


def test_neox_never_pairs_in_registers():
    assert not pairs_in_registers({"rope_dim": 8, "span": "tail", "style": "neox"}, Layout(1, 4096, 4096, 128, 8))


SHUFFLE = r"__shfl_xor_sync\(\(uint\)4294967295, [^;]*, 4, 32\)"
TAKEN = "  y = __shfl_xor_sync((uint)4294967295, r, 4, 32);"


@pytest.mark.parametrize(
    "cuda, branched",
    [
        # How TileLang wrote a per-head span's shuffle before it moved into rope_partner: in the span's branch.
        ("for (;;) {\n if ((8 <= (tid & 15))) {\n" + TAKEN + "\n } else {\n  y = r;\n }\n}", 1),
        ("for (;;) {\n if (a) {\n  x;\n } else {\n" + TAKEN + "\n }\n}", 1),
        ("if (a) {\n for (;;) {\n" + TAKEN + "\n }\n}", 1),
        ("for (;;) {\n if (a) {\n  x;\n }\n" + TAKEN + "\n}", 0),
    ],
)
def test_a_shuffle_of_all_lanes_in_any_branch_is_found(cuda, branched):
    """The CUDA check behind every RoPE shuffle whose mask names all lanes: a branch around it, at any
    depth, would keep lanes from a shuffle that waits on them."""
    assert _shuffles_in_branches(cuda, SHUFFLE) == branched


def test_a_span_the_span_loops_cannot_lay_out_turns_in_the_row_tiles_holding_it():
    """rope_loop says "tiles" exactly where loops over the span alone do not fit the layout, and the
    factory's rope_tiles_start and rope_tiles_columns (SPAN_TILES, evaluated as the factory evaluates
    them) are whole row tiles inside the padded row, the first holding the span's first column and the
    last its last."""
    in_tiles = 0
    for layout, dim, span in CONFIGURATIONS:
        params = {"rope_dim": dim, "span": span, "style": "neox"}
        start = span_start(params, layout.hidden)
        fits = span_loops_fit(dim, start, layout.threads, layout.vector)
        assert rope_loop(params, layout) == ("span" if fits else "tiles"), (layout, dim, span)
        if fits:
            continue
        in_tiles += 1
        names = {"ROPE_START": start, "ROPE_DIM": dim, "threads": layout.threads, "vector": layout.vector}
        for name, source in SPAN_TILES.items():
            names[name] = eval(source.format(row_threads="threads"), {}, names)  # noqa: S307 (our own source)
        first, columns, tile = names["rope_tiles_start"], names["rope_tiles_columns"], layout.threads * layout.vector
        assert first % tile == 0 and columns % tile == 0, (layout, dim, span)
        assert first <= start < first + tile, (layout, dim, span)
        assert first + columns - tile < start + dim <= first + columns <= layout.padded_hidden, (layout, dim, span)
    assert in_tiles > 100, "too few spans outside the span loops for the check to mean anything"


def test_heads_and_blocks_of_several_rows_loop_over_the_row():
    per_head = {"rope_dim": 2, "span": "tail", "style": "gptj", "head_dim": 64}
    assert rope_loop(per_head, Layout(1, 4096, 4096, 128, 8)) == "row"
    assert rope_loop({"rope_dim": 64, "span": "tail", "style": "neox"}, Layout(2, 4096, 4096, 256, 8)) == "row"


@pytest.mark.parametrize(
    "dtype, hidden, rope, why",
    [
        ("float32", 640, {"rope_dim": 2, "style": "gptj"}, "one pair: once 4-byte loads"),
        ("bfloat16", 8192, {"rope_dim": 2, "span": "head"}, "probe55's 12: once 2-byte loads, 0.20 × copy"),
        ("float16", 2304, {"rope_dim": 2, "span": "head", "style": "gptj"}, "probe47's 008: once 2-byte loads"),
        ("bfloat16", 7168, {"rope_dim": 2, "span": "head", "source": "cache", "max_position": 4096}, "probe55's 00: once 2-byte"),
    ],
)
def test_a_short_span_leaves_the_row_its_vectors(dtype, hidden, rope, why):
    """A span of a few columns used to narrow every load of the row to its own width; turned in the row
    tiles holding it, the row keeps the vectors the same chain has without the RoPE, on every route."""
    ops = [{"kind": "rmsnorm"}, {"kind": "rope", **rope}, {"kind": "quant_fp8", "group_size": "token"}]
    rotating, plain = (
        plan(KernelSpec.model_validate({"name": "k", "dtype": dtype, "hidden": hidden, "op": chain}), "k.toml")
        for chain in (ops, [ops[0], ops[2]])
    )
    assert rotating.routes[-1].schedule.vector_bytes == 16, why
    for route in rotating.routes:
        for tokens in (route.first_tokens, route.last_tokens or 1 << 20):
            assert route.schedule.vector_bytes == plain.route_for(tokens).schedule.vector_bytes, (why, tokens)
        assert route.stages[1].params["loop"] == ("row" if route.schedule.block_m > 1 else "tiles"), why


@pytest.mark.parametrize(
    "dtype, hidden, rope",
    [
        ("bfloat16", 3200, {"rope_dim": 8, "span": "head", "style": "gptj", "source": "cache", "max_position": 4096}),
        ("float16", 1024, {"rope_dim": 8, "span": "head"}),
        ("bfloat16", 4096, {"rope_dim": 8}),
    ],
)
def test_a_span_the_loops_hold_on_8_byte_vectors_keeps_them(dtype, hidden, rope):
    """rope.layout_refusal: 16-byte vectors whose span would need its tiles lost to 8-byte ones on which
    loops over the span alone hold it (perf/probe55: bf16 3200 LayerNorm → cache RoPE 8 0.75 → 0.54 × copy)."""
    ops = [{"kind": "layernorm"}, {"kind": "rope", **rope}]
    spec = KernelSpec.model_validate({"name": "k", "dtype": dtype, "hidden": hidden, "op": ops})
    for route in plan(spec, "k.toml").routes:
        assert route.schedule.vector_bytes == 8, route.schedule
        assert route.stages[1].params["loop"] == ("row" if route.schedule.block_m > 1 else "span")


def test_the_reread_variant_refuses_a_span_its_tiles_cannot_turn_alone():
    """Variant reread turns a row's one span in loops over it alone (rope.emit_tile); a span inside one
    16-byte vector is refused, naming the columns and the rule, where the fragment program turns it."""
    ops = [{"kind": "rmsnorm"}, {"kind": "rope", "rope_dim": 8}]
    spec = {"name": "k", "dtype": "bfloat16", "hidden": 8192, "op": ops, "outputs": {"y": False}}
    with pytest.raises(ChainError) as caught:
        plan(KernelSpec.model_validate({**spec, "schedule": {"variant": "reread"}}), "k.toml")
    assert caught.value.key == "schedule.variant"
    assert (
        "rope rotates columns [8184, 8192): a tile turns its span only where that covers two or more whole 8-column" in caught.value.message
    )
    assert plan(KernelSpec.model_validate(spec), "k.toml").routes[-1].schedule.variant != "reread"
