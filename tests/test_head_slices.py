"""Per-head statistics summed in power-of-two slices (norm.head_slice): where one butterfly cannot sum a head,
the slice is the largest power of two of lanes that divides both the head's lanes and the tile's threads, and
every row layout then holds a per-head norm — 16-byte vectors for heads of 80, 96 and 192, which before fell
to one column a thread or had no layout at all."""

from __future__ import annotations

import sys

import pytest

from fusegen.checking import import_plan
from fusegen.compile import cuda_sources
from fusegen.ops.norm import Extent, head_slice
from fusegen.plan import plan
from fusegen.spec import KernelSpec

HEAD_DIMS = range(8, 1025, 8)  # README: head_dim is a multiple of 8
ROW_THREADS = (4, 8, 16, *range(32, 1025, 32))  # powers of two below a warp (rows sharing one), whole warps


def power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def one_butterfly_sums_a_head(head_dim: int, vector: int, row_threads: int) -> bool:
    """TileLang's reduce over a head's lanes: whole tiles per head on a power of two of threads, or whole heads
    of a power-of-two number of vectors per tile."""
    tile = row_threads * vector
    return (head_dim % tile == 0 and power_of_two(row_threads)) or (tile % head_dim == 0 and power_of_two(head_dim // vector))


@pytest.mark.parametrize("vector", (1, 2, 4, 8))
def test_slices_are_the_largest_power_of_two_lane_groups_in_both_head_and_tile(vector):
    for head_dim in HEAD_DIMS:
        for row_threads in ROW_THREADS:
            width = head_slice(head_dim, vector, row_threads)
            if one_butterfly_sums_a_head(head_dim, vector, row_threads):
                assert width == 0, (head_dim, vector, row_threads)
                continue
            lanes = width // vector
            assert width % vector == 0 and power_of_two(lanes), (head_dim, vector, row_threads, width)
            assert head_dim % width == 0 and row_threads % lanes == 0, (head_dim, vector, row_threads, width)
            assert (head_dim // vector) % (2 * lanes) or row_threads % (2 * lanes), (head_dim, vector, row_threads, width)


def _plan(head_dim: int, hidden: int, dtype: str = "bfloat16", kind: str = "rmsnorm", schedule: dict | None = None):
    spec = {"name": "slices", "dtype": dtype, "hidden": hidden, "head_dim": head_dim, "op": [{"kind": kind, "over": "head"}]}
    spec["outputs"] = {"rstd": True}
    return plan(KernelSpec.model_validate({**spec, "schedule": schedule or {}}), "slices.toml")


@pytest.mark.parametrize(
    "head_dim,hidden,dtype,kind,schedule",
    [
        (80, 1280, "float32", "layernorm", None),  # refused naming head_dim before: no layout nested
        (96, 576, "float32", "layernorm", {"threads": 1024}),  # refused naming schedule.threads before
        (192, 3072, "bfloat16", "rmsnorm", None),  # one column a thread before (0.62 × copy, perf/probe73)
    ],
)
def test_heads_no_butterfly_sums_plan_full_vectors(head_dim, hidden, dtype, kind, schedule):
    p = _plan(head_dim, hidden, dtype, kind, schedule)
    last = p.routes[-1]
    assert last.schedule.vector_bytes == 16
    extent = Extent.read(last.stages[0].params)
    assert extent.head_slice == head_slice(head_dim, last.schedule.vector_elems, last.schedule.threads // last.schedule.block_m)
    assert extent.head_slice, "this layout is one no single butterfly sums a head on"
    assert {b.name: b.scope for b in last.scratch}["rstd"] == "shared"


def test_the_kernel_sums_slices_by_shuffles_and_heads_through_shared_memory(tmp_path):
    """bf16 heads of 192 on 128 threads × 16 bytes: slices of 8 lanes (64 columns) reduced by an 8-lane
    butterfly; the 16 heads' statistics written by 16 threads, read back by every lane of their head."""
    p = _plan(192, 3072)
    route = p.routes[-1]
    assert (route.schedule.threads, route.schedule.vector_elems) == (128, 8)
    source = cuda_sources(sys.modules[import_plan(p, tmp_path).__name__ + ".kernel"])[-1]
    assert "AllReduce<tl::SumOp, 8, 1," in source
    assert "if (((int)threadIdx.x) < 16) {" in source  # one thread a head adds its three slices
    assert "uint4" in source  # the row moves in 16-byte vectors
    # each vector's rstd read by one index, not gathered by a vector of them (at_column)
    assert "((float*)rstd)[v_" not in source


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_the_planner_refuses_exactly_the_heads_the_readme_rule_refuses(dtype):
    """README's head_dim error (test_random_specs.per_head_fits, which the random specs draw by): a per-head norm
    plans wherever whole heads and whole row tiles fit 64 values a thread, and is refused naming head_dim
    wherever they do not (one head of 1000 columns; heads of 200 in a row of 1000 fit on one-column vectors)."""
    from test_random_specs import HIDDENS, per_head_fits

    from fusegen.errors import ChainError

    elem = {"bfloat16": 2, "float32": 4}[dtype]
    for hidden in HIDDENS:
        for head_dim in (d for d in range(8, hidden + 1, 8) if hidden % d == 0):
            try:
                _plan(head_dim, hidden, dtype)
                planned = True
            except ChainError as exc:
                assert exc.key == "head_dim", (hidden, head_dim, exc.key, exc.message)
                planned = False
            assert planned == per_head_fits(head_dim, hidden, elem), (hidden, head_dim)
