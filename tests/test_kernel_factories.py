"""kernel.py reads like a hand-written kernel: one factory per distinct program body, written once with the
schedule's numbers as its parameters, which each token range's program calls; the row layouts are named
functions, not lambdas. tests/test_cuda_identity.py holds the CUDA TileLang produces from them to what
it produced before."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from cases import EXAMPLE_KERNELS, spec_for

from fusegen.emit import kernel_module
from fusegen.plan import plan
from fusegen.spec import KernelSpec

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
            "cos_staged = T.alloc_shared((ROPE_HALF,)",
            "T.reduce_sum(T.reshape(row, (HIDDEN // HEAD_DIM, HEAD_DIM)), mean, dim=1)",
            "for p in T.Parallel(HIDDEN // 2):",  # the gptj pairs, turned in registers
            "T.reshape(rope_partner, (HIDDEN // 2, 2))",
            "T.reduce_absmax(T.reshape(row, (HIDDEN // GROUP_SIZE, GROUP_SIZE)), group_scale, dim=1)",
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
    column. A unit row axis is left only where TileLang compiles the 1-D form differently (tests/
    test_cuda_identity.py): the loop around a per-row store (inside T.Parallel one thread stores) and
    RoPE's span loops. A block of several rows keeps the row axis (`block_m`)."""
    for kernel in ("rms_norm_rope_quant_fused", "rms_norm_naive_row_per_block", "rms_norm_splitk"):
        code = "\n".join(ast.unparse(f) for name, f in _functions(_kernel_source(kernel)).items() if name.endswith("_program"))
        assert "[i, " not in code and "[i]" not in code.replace("group_scale[i]", ""), kernel
        assert "def row_thread(i, j)" not in code and "column_thread" not in code, kernel
        assert code.count("T.Parallel(1)") == code.count("Scale[block, 0] = group_scale[i]"), kernel
        assert code.count("T.Parallel(1, ") == code.count("T.Parallel(1, ROPE_DIM)"), kernel
    spec = {**spec_for("head_norm_padded_block_m"), "schedule": {"block_m": 2, "threads": 128}}
    source = kernel_module(plan(KernelSpec.model_validate(spec), "head_norm_padded_block_m", ()))
    assert "row = T.alloc_fragment((block_m, columns), 'float32')" in ast.unparse(_functions(source)["fused_program"])
