"""The pinned row layout of a block of several rows (model.Layout): every row on whole warps of its
own, so a thread holds one row's values and a row is padded to its own threads' tile, not the block's.
Checked on the layout functions kernel.py hands TileLang (codegen.layout_functions), run here,
and on the plans of short-row model chains at block_m 4."""

from __future__ import annotations

from pathlib import Path

import pytest

from fusegen.codegen import DERIVED_EXTENTS, layout_functions
from fusegen.model import Layout, rendered
from fusegen.plan import plan
from fusegen.spec import load_spec

MODELS = Path(__file__).resolve().parent.parent / "specs" / "models"


def layout_namespace(layout: Layout) -> dict:
    """The layout functions a factory defines for TileLang (codegen.layout_functions), run with the
    factory's parameters and derived extents bound: the emitter's own source."""
    names = {"threads": layout.threads, "vector": layout.vector, "block_m": layout.block_m}
    if layout.block_m > 1:
        exec(f"row_threads = {DERIVED_EXTENTS['row_threads']}", names)
        exec(f"chunks = {DERIVED_EXTENTS['chunks'].format(columns=layout.padded_hidden, row_threads=rendered(layout.row_threads))}", names)
    for function in layout_functions(rendered(layout.row_threads), layout.block_m == 1, layout.shared_threads).values():
        exec("\n".join(function), names)
    return names


def pinned_mapping(layout: Layout):
    """(thread, index) functions of (row, column) that pin the row fragment."""
    names = layout_namespace(layout)
    if layout.block_m == 1:
        return (lambda row, column: names["row_thread"](column)), (lambda row, column: names["row_index"](column))
    return names["row_thread"], names["row_index"]


@pytest.mark.parametrize(
    "layout",
    [
        Layout(4, 576, 640, 128, 4),  # DeepSeek MLA kv_a, four rows
        Layout(4, 1024, 1024, 128, 8),  # Qwen3 k, four rows
        Layout(2, 4096, 4096, 256, 8),
        Layout(8, 1024, 1024, 256, 4),
        Layout(1, 4096, 4096, 128, 8),
    ],
)
def test_each_block_row_on_whole_warps_of_its_own(layout):
    thread_of, index_of = pinned_mapping(layout)
    row_threads = layout.threads // layout.block_m
    for row in range(layout.block_m):
        threads = {thread_of(row, column) for column in range(layout.padded_hidden)}
        assert threads == set(range(row * row_threads, (row + 1) * row_threads)), row
        assert row_threads % 32 == 0 and row * row_threads % 32 == 0
        for column in range(layout.padded_hidden):
            assert (thread_of(row, column), index_of(row, column)) == layout.thread_and_index(row, column)
        # columns_held lists each row thread's columns in register order (schedule._staged_words counts them).
        for row_thread in range(row_threads):
            held = layout.columns_held(row_thread)
            thread = row * row_threads + row_thread
            assert [layout.thread_and_index(row, c) for c in held] == [(thread, i) for i in range(len(held))]
    # Every (thread, register) holds one value: nothing replicated, nothing shared by two rows.
    slots = {(thread_of(r, c), index_of(r, c)) for r in range(layout.block_m) for c in range(layout.padded_hidden)}
    assert len(slots) == layout.block_m * layout.padded_hidden
    assert max(index for _, index in slots) + 1 == layout.block_m * layout.padded_hidden // layout.threads


@pytest.mark.parametrize("layout", [Layout(4, 576, 640, 128, 4), Layout(2, 4096, 4096, 256, 8), Layout(8, 1024, 1024, 256, 4)])
def test_per_column_inputs_are_copied_onto_every_block_rows_threads(layout):
    """A staged weight (one value per column) is a fragment replicated over the block rows: copy r must
    sit where row r's fragment holds the same column, or a row would read another row's registers."""
    names = layout_namespace(layout)
    for row in range(layout.block_m):
        for column in range(layout.padded_hidden):
            held = (names["column_thread"](column, row), names["column_index"](column))
            assert held == layout.thread_and_index(row, column), (row, column)


SHARED = [
    Layout(2, 2880, 3072, 128, 8, shared_threads=True),  # bf16 LayerNorm → FP8 2880, two rows (perf/probe109)
    Layout(4, 2880, 3072, 128, 8, shared_threads=True),
    Layout(4, 1024, 1024, 64, 4, shared_threads=True),
    Layout(16, 512, 512, 32, 4, shared_threads=True),
]


@pytest.mark.parametrize("layout", SHARED)
def test_rows_sharing_threads_hold_the_same_columns_of_every_row(layout):
    """rows_share_threads: every row of the block lies on all of its threads, row i's column j on the thread that
    holds column j of every other row, in registers of its own after those of the rows before it."""
    thread_of, index_of = pinned_mapping(layout)
    per_row = layout.padded_hidden // layout.threads
    for row in range(layout.block_m):
        assert {thread_of(row, column) for column in range(layout.padded_hidden)} == set(range(layout.threads))
        for column in range(layout.padded_hidden):
            assert thread_of(row, column) == thread_of(0, column)
            assert index_of(row, column) == row * per_row + index_of(0, column)
            assert (thread_of(row, column), index_of(row, column)) == layout.thread_and_index(row, column)
    slots = {(thread_of(r, c), index_of(r, c)) for r in range(layout.block_m) for c in range(layout.padded_hidden)}
    assert len(slots) == layout.block_m * layout.padded_hidden
    assert max(index for _, index in slots) + 1 == layout.block_m * per_row


@pytest.mark.parametrize("layout", SHARED)
def test_rows_sharing_threads_share_one_copy_of_each_per_column_input(layout):
    """A staged weight is one copy, not replicated: its column j where every row's column j is."""
    names = layout_namespace(layout)
    for column in range(layout.padded_hidden):
        assert (names["column_thread"](column), names["column_index"](column)) == layout.thread_and_index(0, column)


def test_short_rows_at_four_per_block_pad_to_their_own_threads():
    """DeepSeek MLA's kv_a row (576 columns) at four rows per block: each row on one warp of 4-column
    vectors, padded to 640 (five 128-column row tiles), 20 values a thread as at one row per block —
    not to the block's tile (1024 columns, 32 values a thread, 44 % of them padding)."""
    spec, _ = load_spec(MODELS / "deepseek-v3-mla-kv-a.toml")
    spec = spec.model_copy(update={"schedule": spec.schedule.model_copy(update={"block_m": 4})})
    s = plan(spec, "kv_a").schedule
    assert (s.threads, s.vector_elems, s.padded_hidden, s.elems_per_thread) == (128, 4, 640, 20), s.reasons
