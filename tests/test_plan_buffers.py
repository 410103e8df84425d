"""The plan owns every buffer: each program of a generated kernel allocates exactly the buffers its route
lists (name, scope, shape, dtype), no more, and the barriers per row the plan states are the ones the
CUDA of the committed examples shows."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from cases import CASES, PENDING_GPU_CASES, ROUTED, ROUTED_CASES, spec_for

from fusegen.build import display_path, plan_spec
from fusegen.checking import import_plan
from fusegen.compile import cuda_sources
from fusegen.emit import program_sources
from fusegen.plan import plan
from fusegen.spec import KernelSpec, load_spec
from fusegen.tuning import Tuning

ROOT = Path(__file__).resolve().parent.parent
SPECS = sorted((ROOT / "specs").glob("*.toml"))
# TIR's storage scopes of the plan's scopes: TileLang puts shared buffers in dynamic shared memory.
SCOPES = {"fragment": "local.fragment", "shared": "shared.dyn", "local": "local"}


def _example_plan(path):
    spec, text = load_spec(path)
    return plan_spec(spec, text, display_path(path), Tuning.load(ROOT / "tuning.json"))


def allocated(prim_func) -> set[tuple]:
    """Every buffer a traced program allocates, as (name, scope, shape, dtype)."""
    from tvm import tirx

    found = []

    def visit(node):
        for b in getattr(node, "alloc_buffers", ()):
            found.append((b.name, b.scope(), tuple(int(d) for d in b.shape), str(b.dtype)))

    tirx.stmt_functor.post_order_visit(prim_func.body, visit)
    assert len(found) == len(set(found)), f"a buffer allocated twice: {found}"
    return set(found)


def planned(route) -> set[tuple]:
    return {(b.name, SCOPES[b.scope], b.shape, b.dtype) for b in route.scratch}


def assert_allocations_planned(p, module):
    assert len(module.ROUTES) == len(p.routes)
    for (first, last, program), route in zip(module.ROUTES, p.routes):
        assert (first, last) == (route.first_tokens, route.last_tokens)
        got, want = allocated(program()), planned(route)
        assert got == want, (
            f"tokens {route.label()}: allocated, not planned: {sorted(got - want)}; planned, not allocated: {sorted(want - got)}"
        )


EVERY_CASE = sorted({**CASES, **PENDING_GPU_CASES})
VARIED = [(name, ()) for name in EVERY_CASE] + [(name, ROUTED) for name in ROUTED_CASES]


@pytest.mark.parametrize("name,tuned", VARIED, ids=[n + ("-routed" if t else "") for n, t in VARIED])
def test_every_allocation_is_planned(name, tuned, tmp_path):
    p = plan(KernelSpec.model_validate(spec_for(name)), name, tuned)
    assert_allocations_planned(p, sys.modules[import_plan(p, tmp_path).__name__ + ".kernel"])


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_committed_examples_allocate_what_their_plan_lists(path, tmp_path):
    p = _example_plan(path)
    assert_allocations_planned(p, sys.modules[import_plan(p, tmp_path).__name__ + ".kernel"])


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_committed_cuda_has_the_planned_barriers(path):
    p = _example_plan(path)
    sources = program_sources((ROOT / "generated" / p.name / "kernel.cu").read_text())
    for served, source in zip(p.programs, sources):
        assert source.count("__syncthreads()") == served[0].barriers_per_row, served[0].label()


# Streams of both rings: per-token side inputs (a cos/sin or cache row) with and without the x ring, exchanges
# of one and of several buffers, and a stream whose only barrier is its ring's.
STREAMS = [
    "stream_registers_add_fp32",
    "stream_registers_ln_e5m2_2880",
    "stream_registers_rope_quant_y",
    "rope_cache_stream_quant",
    "stream_ln_y_mean",
    "stream_group_quant_alone",
]


@pytest.mark.parametrize("name", STREAMS)
def test_a_streams_row_loop_has_the_planned_barriers_or_tilelangs_one_more(name, tmp_path):
    """Each row of a stream waits at the barriers its plan marks — its ring's (the x ring's, or with x held in
    registers the side inputs' own ring's) and each exchange's — and at most one more: TileLang's, where no
    barrier between orders a row's first shared write after the last row's reads (`fusegen plan` says so)."""
    p = _case_plan(name)
    (route,) = p.routes
    assert route.schedule.variant == "stream"
    (source,) = cuda_sources(sys.modules[import_plan(p, tmp_path).__name__ + ".kernel"])
    row_loop = source[source.index("for (int step") :]
    assert row_loop.count("__syncthreads()") - route.barriers_per_row in (0, 1)


def _case_plan(name: str):
    return plan(KernelSpec.model_validate(spec_for(name)), name)


def _reduces_within_lanes(p, route) -> bool:
    return route.schedule.layout(p.hidden).reduces_within_lanes


def _any_route_reduces_within_lanes(name: str) -> bool:
    p = _case_plan(name)
    return any(_reduces_within_lanes(p, route) for route in p.routes)


REDUCING_WITHIN_LANES = [name for name in EVERY_CASE if _any_route_reduces_within_lanes(name)]


@pytest.mark.parametrize("name", REDUCING_WITHIN_LANES)
def test_rows_reducing_within_their_lanes_plan_and_compile_no_exchange(name, tmp_path):
    """A program whose rows share warps, or whose block holds four or more rows on a warp each, plans no
    exchange, and its CUDA has exactly the barriers the plan lists (a gather's staging, a shared RoPE span, a
    per-head statistic's slice sums: none for the row reductions), each row reduction folded by shuffles among
    the row's lanes."""
    p = _case_plan(name)
    sources = cuda_sources(sys.modules[import_plan(p, tmp_path).__name__ + ".kernel"])
    shared = [(served[0], source) for served, source in zip(p.programs, sources) if _reduces_within_lanes(p, served[0])]
    assert shared
    for route, source in shared:
        assert source.count("__syncthreads()") == route.barriers_per_row, route.label()
        assert not any(b.name.endswith("_warps") for b in route.scratch), route.label()
        if any(r.partials for stage in route.stages for r in stage.reductions):
            lanes = route.schedule.threads // route.schedule.block_m
            assert f"AllReduce<tl::SumOp, {lanes}, 1," in source or f"AllReduce<tl::MaxOp, {lanes}, 1," in source, route.label()
        assert "warp_reduce" not in source, route.label()


def test_an_unplanned_buffer_is_refused():
    from fusegen.codegen import KernelFrame

    p = plan(KernelSpec.model_validate(spec_for("rms_fp16_4096")), "x")
    frame = KernelFrame(p.layout, "m", buffers=p.primary.scratch)
    assert frame.alloc("rstd").startswith("rstd = T.alloc_fragment((1,)")
    with pytest.raises(KeyError, match="not in the plan"):
        frame.alloc("rope_span")
