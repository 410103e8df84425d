"""Every case in cases.py plans, compiles for sm_90a and passes the CUDA checks (no GPU needed).

This pins the planner and emitter rules that the GPU matrix found (and that TileLang's layout
inference would otherwise break): a pinned row layout, masked padding, vector widths."""

from __future__ import annotations

import logging

import pytest
from cases import CASES, PENDING_GPU_CASES, ROUTED, ROUTED_CASES, spec_for

from fusegen.checking import cuda_check_failures
from fusegen.spec import KernelSpec


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    logging.getLogger("tilelang").setLevel(logging.WARNING)
    return tmp_path_factory.mktemp("compile-matrix")


@pytest.mark.parametrize("name", sorted({**CASES, **PENDING_GPU_CASES}))
def test_case_compiles_with_clean_cuda(name, scratch):
    failures = cuda_check_failures(KernelSpec.model_validate(spec_for(name)), scratch)
    assert not failures, failures


@pytest.mark.parametrize("name", ROUTED_CASES)
def test_routed_programs_each_compile_with_clean_cuda(name, scratch):
    failures = cuda_check_failures(KernelSpec.model_validate(spec_for(name)), scratch / "routed", ROUTED)
    assert not failures, failures


def test_stream_grid_is_sized_from_the_gpu_it_is_built_on(scratch, monkeypatch):
    """A persistent grid sized for 132 SMs would run in two waves on a Hopper part with fewer (H100 PCIe:
    114): the program reads the SM count when it is built."""
    import sys

    from fusegen.checking import import_plan
    from fusegen.compile import cuda_sources
    from fusegen.plan import plan

    planned = plan(KernelSpec.model_validate({**spec_for("stream_fp8_only"), "name": "stream_on_114_sms"}), "x")
    blocks_per_sm = planned.routes[0].schedule.blocks_per_sm
    kernel_module = sys.modules[import_plan(planned, scratch / "sms").__name__ + ".kernel"]
    monkeypatch.setattr(kernel_module, "_sm_count", lambda: 114)
    [source] = cuda_sources(kernel_module)
    grid = blocks_per_sm * 114
    # The block loop strides by the grid, and no trace of the 132-SM grid is left.
    assert f"/ {grid})" in source and f"{grid - 1})" in source
    assert str(blocks_per_sm * 132) not in source


# One compile per variant under the name most likely to collide with what its program reads (the builtin
# `min` sizes a pinned stream grid; `T` is tilelang.language; `m` the token count; `range` a builtin).
NASTY_NAMES = [("fragment", "T", None), ("stream", "m", None), ("naive", "range", None), ("splitk", "program_0", None)]


def _one_rmsnorm_or_chain(name: str, variant: str, tokens: int | None) -> KernelSpec:
    chain = [{"kind": "rmsnorm"}] + (
        [] if variant in ("naive", "splitk") else [{"kind": "rope", "rope_dim": 64}, {"kind": "quant_fp8", "group_size": 128}]
    )
    return KernelSpec.model_validate(
        {"name": name, "dtype": "bfloat16", "hidden": 4096, "tokens": tokens, "op": chain, "schedule": {"variant": variant}}
    )


@pytest.mark.parametrize("variant, name, tokens", NASTY_NAMES, ids=[f"{v}-{n}" for v, n, _ in NASTY_NAMES])
def test_a_kernel_named_like_what_its_program_reads_compiles(variant, name, tokens, scratch):
    failures = cuda_check_failures(_one_rmsnorm_or_chain(name, variant, tokens), scratch / "names")
    assert not failures, failures


def test_stream_compiles_at_its_token_bound_named_min(scratch):
    """The stream program's int32 token index at the largest count the planner allows (plan.stream_token_limit),
    under the name of the builtin its pinned grid is sized with; one more is a spec error naming tokens, and
    the dynamic program's call refuses more (Plan.most_tokens)."""
    from fusegen.errors import ChainError
    from fusegen.plan import plan
    from fusegen.schedule import stream_token_limit

    spec = _one_rmsnorm_or_chain("min", "stream", 1)
    planned = plan(spec, "x")
    schedule = planned.schedule
    limit = stream_token_limit(schedule.blocks_per_sm, schedule.ring_slots)
    # A dynamic count past it is refused at the call (runtime.Launcher), from the bound the plan carries.
    assert planned.most_tokens == schedule.most_tokens == limit
    failures = cuda_check_failures(spec.model_copy(update={"tokens": limit}), scratch / "bound")
    assert not failures, failures
    with pytest.raises(ChainError, match=rf"^tokens: .*allowed 1 … {limit}$"):
        plan(spec.model_copy(update={"tokens": limit + 1}), "x")


def test_a_factory_taking_prefetch_pins_the_side_inputs_of_the_prefetched_program_only(scratch):
    """fp32 LayerNorm on two routes that differ in prefetch share one factory: weight and bias lose
    __restrict__ under `if prefetch:` (schedule.with_pinned_side_inputs), so the staged program declares them
    without it, and the program that reads them where used keeps it."""
    import sys

    from fusegen.checking import import_plan
    from fusegen.compile import cuda_sources
    from fusegen.cuda_checks import check_cuda
    from fusegen.plan import plan
    from fusegen.tuning import TunedRoute

    routes = (
        TunedRoute(1, 64, {"variant": "fragment", "threads": 512, "block_m": 1, "blk_k": "auto", "prefetch": False}, "test"),
        TunedRoute(65, None, {"variant": "fragment", "threads": 256, "block_m": 1, "blk_k": "auto", "prefetch": True}, "test"),
    )
    spec = KernelSpec.model_validate({"name": "ln_fp32_prefetch_routes", "dtype": "float32", "hidden": 4096, "op": [{"kind": "layernorm"}]})
    planned = plan(spec, "x", routes)
    assert [r.schedule.pinned_side_inputs for r in planned.routes] == [False, True]
    kernel_module = sys.modules[import_plan(planned, scratch / "prefetch-routes").__name__ + ".kernel"]
    assert all("fused_program" in program.__code__.co_names for program in (kernel_module.program_0, kernel_module.program_1))
    unstaged, staged = cuda_sources(kernel_module)
    assert "const float* __restrict__ Weight" in unstaged and "const float* __restrict__ Bias" in unstaged
    assert "const float* Weight" in staged and "const float* Bias" in staged
    failed = [f"{c.name}: {c.detail}" for c in check_cuda(planned, [unstaged, staged]) if not c.ok]
    assert not failed, failed
