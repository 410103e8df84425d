"""kernel.py reads like a hand-written kernel: one factory per program body, written once with the
schedule's numbers and switches (prefetch, the joint reduction) as its parameters, which each token
range's program calls; the row layouts are named functions, not lambdas. tests/test_cuda_identity.py
holds the CUDA TileLang produces from them to what it produced before."""

from __future__ import annotations

import ast
import copy
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from cases import EXAMPLE_KERNELS, ROUTED, ROUTED_CASES, spec_for

from fusegen.emit import kernel_module
from fusegen.plan import plan
from fusegen.spec import KernelSpec, load_spec
from fusegen.tuning import TunedRoute, Tuning

ROOT = Path(__file__).resolve().parent.parent


def _kernel_source(name: str) -> str:
    return (ROOT / "generated" / name / "kernel.py").read_text()


def _functions(source: str) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)}


def _factory_calls(source: str) -> dict[str, tuple[str, dict[str, int]]]:
    """program_<k> -> (the factory it calls, its arguments); asserts a program is nothing but that call."""
    calls = {}
    for name, function in _functions(source).items():
        if not re.fullmatch(r"program_\d+", name):
            continue
        docstring, statement = function.body
        assert isinstance(docstring, ast.Expr) and isinstance(statement, ast.Return), name
        call = statement.value
        assert isinstance(call, ast.Call) and not call.args, name
        calls[name] = (call.func.id, {k.arg: ast.literal_eval(k.value) for k in call.keywords})
    return calls


def test_each_program_calls_a_factory_and_no_two_factories_share_a_body():
    for kernel in EXAMPLE_KERNELS:
        source = _kernel_source(kernel)
        calls = _factory_calls(source)
        assert calls, kernel
        functions = _functions(source)
        factories = {factory for factory, _ in calls.values()}
        bodies = [ast.dump(ast.Module(body=functions[f].body[1:], type_ignores=[])) for f in factories]
        assert len(set(bodies)) == len(bodies), f"{kernel}: two factories with one body"
        for factory, arguments in calls.values():
            assert all(isinstance(v, int) for v in arguments.values()), (kernel, arguments)
            assert [a.arg for a in functions[factory].args.args] == list(arguments), (kernel, factory)


def test_routes_that_differ_only_in_numbers_share_one_factory():
    """rms_norm_rope_fused runs 128 threads below 65 tokens and above 1024, 512 between; the naive kernel
    256 then 128: one body each, called with each route's thread count."""
    for kernel, threads in (("rms_norm_rope_fused", {128, 512}), ("rms_norm_naive_row_per_block", {128, 256})):
        calls = _factory_calls(_kernel_source(kernel))
        assert {factory for factory, _ in calls.values()} == {"fused_program"}, kernel
        assert {arguments["threads"] for _, arguments in calls.values()} == threads, kernel


def test_factories_name_their_extents_and_layouts():
    """No thread count, vector width or row width as a literal in a factory, and no lambda anywhere: the
    shapes are expressions of the parameters, the row layout is row_thread / row_index."""
    source = _kernel_source("rms_norm_rope_quant_fused")
    assert "lambda" not in source
    functions = _functions(source)
    for factory, _ in _factory_calls(source).values():
        code = ast.unparse(functions[factory])
        assert "T.Kernel(m, threads=threads)" in code
        assert "T.reshape(sumsq_terms, (chunks, threads, vector))" in code
        assert "forward_thread_fn=row_thread, forward_index_fn=row_index" in code
        assert "T.alloc_fragment((HIDDEN,), 'float32')" in code
        assert not re.search(r"\b(4096|2048|1024|256|128|8)\b", code), re.findall(r"\b(?:4096|2048|1024|256|128|8)\b", code)


def test_counts_and_widths_are_written_from_the_constants_they_derive_from():
    """Heads, quantisation groups, cos/sin and cache widths, a per-head or column-range weight: the kernel
    writes each from HEAD_DIM, GROUP_SIZE, ROPE_HALF, ROPE_DIM, NORM_START/NORM_END, and a factory for a
    padded row counts its heads from its `columns`. (1024 columns in heads of 64, a 32-wide span, groups
    of 64: 16 heads, 16 pairs, 16 groups, none of them written as 16.)"""
    expected = {
        "ln_head_partial_gptj_group": (
            "Weight: T.Tensor((HEAD_DIM,)",
            "Cos: T.Tensor((m, ROPE_HALF)",
            "Mean: T.Tensor((m, HIDDEN // HEAD_DIM)",
            "Scale: T.Tensor((m, HIDDEN // GROUP_SIZE)",
            # staged on every thread: whole passes of the row's threads (plan.whole_thread_extent)
            "cos_staged = T.alloc_shared(((ROPE_HALF + threads - 1) // threads * threads,)",
            "cos_staged[j] = Cos[block, T.min(j, ROPE_HALF - 1)]",
            "T.reduce_sum(T.reshape(row, (HIDDEN // HEAD_DIM, HEAD_DIM)), mean, dim=1)",
            "for p in T.Parallel(HIDDEN // 2):",  # the gptj pairs, turned in registers
            "T.reshape(rope_partner, (HIDDEN // 2, 2))",
            "T.reduce_max(T.reshape(row_abs, (HIDDEN // GROUP_SIZE, GROUP_SIZE)), group_scale, dim=1)",
        ),
        "mla_kv_a": ("Weight: T.Tensor((NORM_END - NORM_START,)", "CosSinCache: T.Tensor((8192, ROPE_DIM)"),
        "head_norm_padded_block_m": ("for i, h in T.Parallel(block_m, columns // HEAD_DIM):", "h < HIDDEN // HEAD_DIM"),
    }
    specs = {case: spec_for(case) for case in expected}
    # An 8-wide neox span splits its pairs across 8-element vectors: the spans go through shared memory.
    neox_8 = {"kind": "rope", "rope_dim": 8, "style": "neox", "span": "head"}
    specs["per_head_shared_span"] = {**specs["ln_head_partial_gptj_group"], "name": "per_head_shared_span", "op": [neox_8]}
    expected["per_head_shared_span"] = ("rope_span = T.alloc_shared((HIDDEN // HEAD_DIM * ROPE_DIM,)",)
    for case, fragments in expected.items():
        source = kernel_module(plan(KernelSpec.model_validate(specs[case]), case, ()))
        assert [f for f in fragments if f not in source] == [], case
        if case == "ln_head_partial_gptj_group":
            assert not re.search(r"\b16\b", ast.unparse(_functions(source)["fused_program"])), "a count written as a number"


def test_one_row_programs_are_written_in_1d_forms():
    """A block of one row has no row axis: 1-D buffers and loops, no `[i, j]`, the layout functions of one
    column, and no unit row axis anywhere: a per-row value (Scale, Mean, Rstd) leaves by T.copy, and RoPE's
    span loops (shuffled, paired in registers, through a shared span) name their layout, the threads that
    hold the span's columns (on_row_threads); each compiles to the CUDA of the `T.Parallel(1, …)` form it
    replaced (tests/test_cuda_identity.py). A block of several rows keeps the row axis (`block_m`)."""
    sources = {
        kernel: _kernel_source(kernel)
        for kernel in ("rms_norm_rope_quant_fused", "layer_norm_fwd", "rms_norm_naive_row_per_block", "rms_norm_splitk")
    }
    for case in ("quant_ln_rope_g128", "rope_neox_512_two_warps"):  # RoPE pairs in registers; through a shared span
        sources[case] = kernel_module(plan(KernelSpec.model_validate(spec_for(case)), case, ()))
    for kernel, source in sources.items():
        factories = [f for name, f in _functions(source).items() if name.endswith("_program")]
        code = "\n".join(ast.unparse(f) for f in factories)
        assert "[i, " not in code and "[i]" not in code and "T.Parallel(1)" not in code and "T.Parallel(1, " not in code, kernel
        assert "def row_thread(i, j)" not in code and "column_thread" not in code, kernel
        span_loops = [
            ast.unparse(loop.iter)
            for factory in factories
            for loop in ast.walk(factory)
            if isinstance(loop, ast.For) and "ROPE_START" in ast.unparse(loop) and ast.unparse(loop.iter).startswith("T.Parallel(")
        ]
        assert all("loop_layout=on_row_threads(" in loop for loop in span_loops), (kernel, span_loops)
        assert bool(span_loops) == ("ROPE_START" in source), kernel
    assert "T.copy(group_scale, Scale[block, 0])" in sources["rms_norm_rope_quant_fused"]
    assert "T.copy(mean, Mean[block])" in sources["layer_norm_fwd"] and "T.copy(rstd, Rstd[block])" in sources["layer_norm_fwd"]
    spec = {**spec_for("head_norm_padded_block_m"), "schedule": {"block_m": 2, "threads": 128}}
    source = kernel_module(plan(KernelSpec.model_validate(spec), "head_norm_padded_block_m", ()))
    assert "row = T.alloc_fragment((block_m, columns), 'float32')" in ast.unparse(_functions(source)["fused_program"])


def test_routes_of_one_variant_share_one_factory():
    """Every committed example whose routes share a variant and a row count per block has one factory,
    called with each route's numbers and switches: rms_norm and rms_norm_rope_quant_fused switch prefetch
    at their token boundary, rms_norm_rope_quant_fp8_only the joint reduction."""
    switching = {"rms_norm": "prefetch", "rms_norm_rope_quant_fused": "prefetch", "rms_norm_rope_quant_fp8_only": "joint_reduction"}
    for kernel in EXAMPLE_KERNELS:
        routes = json.loads((ROOT / "generated" / kernel / "plan.json").read_text())["routes"]
        assert len({(r["schedule"]["variant"], r["schedule"]["block_m"] > 1) for r in routes}) == 1, kernel
        calls = _factory_calls(_kernel_source(kernel))
        assert {factory for factory, _ in calls.values()} == {"fused_program"}, kernel
        if kernel in switching:
            assert {arguments[switching[kernel]] for _, arguments in calls.values()} == {False, True}, kernel


class _Switched(ast.NodeTransformer):
    """A factory with its switches set: each `if` on one and each `a if switch else b` replaced by the
    side the value picks, as TileLang picks it when it runs the factory's Python."""

    def __init__(self, switches: dict[str, bool]):
        self.switches = switches

    def _value(self, test: ast.expr) -> bool | None:
        if isinstance(test, ast.Name) and test.id in self.switches:
            return self.switches[test.id]
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            value = self._value(test.operand)
            return None if value is None else not value
        return None

    def visit_If(self, node):
        value = self._value(node.test)
        if value is None:
            return self.generic_visit(node)
        return [self.visit(statement) for statement in (node.body if value else node.orelse)]

    def visit_IfExp(self, node):
        value = self._value(node.test)
        return self.generic_visit(node) if value is None else self.visit(node.body if value else node.orelse)


def _factory_code(function: ast.FunctionDef, switches: dict[str, bool] | None = None) -> str:
    """A factory's statements after its docstring, its switches set."""
    body = ast.Module(body=copy.deepcopy(function.body[1:]), type_ignores=[])  # the transformer edits in place
    return ast.unparse(ast.fix_missing_locations(_Switched(switches or {}).visit(body)))


def _each_program_is_its_own_factory(spec: dict, tuned: tuple) -> list[str]:
    """Each program's shared factory with the program's switches set, against the factory a kernel of that
    program's tuned route alone gets: the names of the programs where they differ."""
    planned = plan(KernelSpec.model_validate(spec), spec["name"], tuned)
    source = kernel_module(planned)
    functions, calls = _functions(source), _factory_calls(source)
    differing = []
    for index, served in enumerate(planned.programs):
        factory, arguments = calls[f"program_{index}"]
        switches = {k: v for k, v in arguments.items() if isinstance(v, bool)}
        (route,) = (r for r in tuned if r.first_tokens == served[0].first_tokens)
        alone = plan(KernelSpec.model_validate(spec), spec["name"], (replace(route, first_tokens=1, last_tokens=None),))
        if _factory_code(functions[factory], switches) != _factory_code(_functions(kernel_module(alone))["fused_program"]):
            differing.append(f"program_{index}")
    return differing


SWITCHED = tuple(
    TunedRoute(first, last, {"variant": "fragment", "threads": threads, "block_m": 1, "blk_k": "auto", **switches}, "test")
    for first, last, threads, switches in (
        (1, 64, 256, {"prefetch": False, "joint_reduction": False}),
        (65, 1024, 256, {"prefetch": True, "joint_reduction": False}),
        (1025, 4096, 128, {"prefetch": False, "joint_reduction": True}),
        (4097, None, 128, {"prefetch": True, "joint_reduction": True}),
    )
)


def test_a_factory_taking_both_switches_is_each_routes_own_program():
    """A quant chain routed through every pair of switch values gets one factory taking both; with a
    program's switches set it is, statement for statement, the factory of that route alone."""
    spec = {**spec_for("quant_g128_bf16_7168"), "hidden": 4096, "op": [{"kind": "rmsnorm"}, {"kind": "quant_fp8", "group_size": "token"}]}
    source = kernel_module(plan(KernelSpec.model_validate(spec), "switched", SWITCHED))
    assert list(_factory_calls(source).values()) == [
        ("fused_program", {"threads": threads, "vector": 8, "prefetch": prefetch, "joint_reduction": joint})
        for threads, prefetch, joint in ((256, False, False), (256, True, False), (128, False, True), (128, True, True))
    ]
    assert _each_program_is_its_own_factory(spec, SWITCHED) == []


@pytest.mark.parametrize("kernel", EXAMPLE_KERNELS)
def test_each_example_program_is_its_own_factory_with_its_switches_set(kernel):
    spec, _ = load_spec(ROOT / "specs" / f"{kernel}.toml")
    tuned = Tuning.load(ROOT / "tuning.json").routes(spec)
    assert _each_program_is_its_own_factory(spec.model_dump(mode="json"), tuned) == []


@pytest.mark.parametrize("case", ROUTED_CASES)
def test_routes_of_two_row_counts_keep_a_factory_each(case):
    """The routed cases run one row per block, then two rows prefetched: bodies of their own forms
    (1-D against a row axis), one factory each, neither taking prefetch."""
    source = kernel_module(plan(KernelSpec.model_validate(spec_for(case)), case, ROUTED))
    calls = _factory_calls(source)
    assert [calls[p][0] for p in sorted(calls)] == ["fragment_program", "fragment_block_m_prefetched_program"], case
    assert not any("prefetch" in arguments for _, arguments in calls.values()), case
    assert _each_program_is_its_own_factory(spec_for(case), ROUTED) == []
