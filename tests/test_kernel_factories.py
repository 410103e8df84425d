"""kernel.py reads like a hand-written kernel: one factory per distinct program body, written once with the
schedule's numbers as its parameters, which each token range's program calls; the row layouts are named
functions, not lambdas. tests/test_cuda_identity.py holds the CUDA TileLang produces from them to what
it produced before."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from cases import EXAMPLE_KERNELS

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
        assert "T.reshape(sumsq_terms, (1, chunks, threads, vector))" in code
        assert "forward_thread_fn=row_thread, forward_index_fn=row_index" in code
        assert "T.alloc_fragment((1, HIDDEN), 'float32')" in code
        assert not re.search(r"\b(4096|2048|1024|256|128|8)\b", code), re.findall(r"\b(?:4096|2048|1024|256|128|8)\b", code)
