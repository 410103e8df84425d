"""fusegen.native.kernel_call, on the CPU: the C++ launch path calls each program's kernel function with what
the program's host code would pack, read from that code. Every case's programs must be readable; what is
read must be what TileLang's lowering launches (its device module's thread extents and shared memory, from
uncached compiles); the expressions must mean what the C text means."""

from __future__ import annotations

import logging
import re

import pytest
import torch
from cases import CASES, PENDING_GPU_CASES, ROUTED, ROUTED_CASES, spec_for

from fusegen import checking, native, runtime
from fusegen.native.kernel_call import compile_expression, evaluate, kernel_call
from fusegen.spec import KernelSpec

TOKEN_COUNTS = (1, 2, 37, 64, 65, 4099, 100_003)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    logging.getLogger("tilelang").setLevel(logging.WARNING)
    return tmp_path_factory.mktemp("kernel-call")


def programs_of(name, scratch, tuned=()):
    module = checking.build_variant(KernelSpec.model_validate(spec_for(name)), scratch / name, tuned)
    launcher = module.launcher
    return launcher, [runtime.compile_program(program, launcher.target) for program in launcher.programs]


@pytest.mark.parametrize("name", sorted({**CASES, **PENDING_GPU_CASES}))
def test_every_programs_kernel_call_is_read_from_its_host_code(name, scratch):
    launcher, programs = programs_of(name, scratch, ROUTED if name in ROUTED_CASES else ())
    tensors = len(launcher.inputs) + len(launcher.outputs)
    for compiled in programs:
        call = kernel_call(compiled.adapter.get_host_source())
        assert call is not None, f"{name}: the host code of a program is not one kernel_call reads"
        pointers = [t for t in call.tensors if t >= 0]
        assert len(set(pointers)) == len(pointers) and set(pointers) <= set(range(tensors))
        assert all(evaluate(code, 5) > 0 for code in call.codes if code)


# A case per grid shape: one row per block (with the two-warp few-token route), rows per block, a row split
# over blocks, a persistent stream grid, split-K's chunk loop, the naive variant's shared row.
LOWERED = ["rms_bf16_1536", "rms_block_m4", "mla_q_b_split8", "stream_fp8_only", "rms_splitk", "rms_naive"]


@pytest.mark.parametrize("name", LOWERED)
def test_what_is_read_is_what_tilelangs_lowering_launches(name, scratch):
    import tilelang
    from tvm import arith, tirx

    tilelang.disable_cache()  # the device module exists only where TileLang compiled the program itself
    try:
        launcher, programs = programs_of(name, scratch)
    finally:
        tilelang.enable_cache()
    for compiled in programs:
        call = kernel_call(compiled.adapter.get_host_source())
        [(symbol, function)] = compiled.artifact.device_mod.functions.items()
        assert call.kernel == symbol.name_hint
        scalars = [parameter for parameter in function.params if not str(parameter.dtype).startswith("handle")]
        extents = function.attrs["thread_extent"]
        for tokens in TOKEN_COUNTS:
            values = {parameter: tirx.IntImm(parameter.dtype, tokens) for parameter in scalars}

            def value(expression, values=values):
                return int(arith.Analyzer().simplify(tirx.stmt_functor.substitute(expression, values)))

            launched = [tokens] * len(scalars) + [
                int(function.attrs.get("dyn_shared_memory_buf", 0)) if tag == "tirx.use_dyn_shared_memory" else value(extents[tag])
                for tag in function.attrs["tirx.kernel_launch_params"]
            ]
            assert [evaluate(code, tokens) for code in call.codes if code] == launched, (name, tokens)


# Host-code expressions of the kinds TVM prints, with what they mean.
C_EXPRESSIONS = {
    "((int64_t)m)": lambda m: m,
    "(int64_t)128": lambda m: 128,
    "((int64_t)((m + 1) >> 1))": lambda m: (m + 1) >> 1,
    "((int64_t)(((m + 7) / 8)))": lambda m: (m + 7) // 8,
    "((int64_t)((m) < (528) ? (m) : (528)))": lambda m: min(m, 528),
    "((int64_t)max((m * 16), 1))": lambda m: max(m * 16, 1),
    "((int64_t)((m % 3) - -2 << 2))": lambda m: ((m % 3) + 2) << 2,
    "(m >= 64 ? m - 64 : 64 - m) + (m == 37) * 3 - (m != 2) * 2 <= 100": lambda m: int(abs(m - 64) + (m == 37) * 3 - (m != 2) * 2 <= 100),
    "1 ? 2 : 3 ? 4 : 5": lambda m: 2,
}


@pytest.mark.parametrize("text", C_EXPRESSIONS)
def test_expressions_mean_what_the_c_text_means(text):
    codes = compile_expression(text)
    assert codes is not None
    for tokens in TOKEN_COUNTS:
        assert evaluate(codes, tokens) == C_EXPRESSIONS[text](tokens)


@pytest.mark.parametrize("text", ["((int64_t)n)", "((int64_t)m) + 1.5", "pow(m, 2)", "x[0]", "m && 1", "(m", "m ? 1", ""])
def test_anything_else_is_not_read(text):
    assert compile_expression(text) is None


def test_the_cpp_launch_path_calls_the_kernel_function_with_what_the_host_code_packs(tmp_path):
    """A stub kernel function records what the C++ path passes: each slot's data pointer, and each integer
    evaluated at the call's token count."""
    from stub_program import StubProgram

    from fusegen.native.kernel_call import KernelCall

    assert native.available(), native.unavailable()
    stub = StubProgram(tmp_path)
    call = KernelCall(
        "stub_kernel",
        (2, 0, -1, 1, -1, -1),
        ((), (), compile_expression("((int64_t)m)"), (), compile_expression("((m + 3) >> 2)"), (0, 256)),
    )
    outputs = (runtime.TensorSpec("y", torch.float32, ("m", 64)),)
    program = native.register(stub.function, outputs, (stub.kernel, call))
    for tokens in (1, 7, 4099):
        x, w = torch.randn(tokens, 64), torch.randn(64)
        (y,) = native.launch()(program, native.SEPARATE, x, w)
        assert stub.calls()[-1] == (y.data_ptr(), x.data_ptr(), tokens, w.data_ptr(), (tokens + 3) >> 2, 256)


def test_host_code_of_another_shape_keeps_the_host_function(scratch):
    """A second kernel launch, an argument of a kind the reading does not take (here a float), or a pointer
    that is no tensor's data: no KernelCall, so the program is called through its host function."""
    launcher, [compiled] = programs_of("rms_fp16_4096", scratch)
    source = compiled.adapter.get_host_source()
    call = kernel_call(source)
    assert call is not None
    kernel_launch = re.search(r"  if \(TVMFFIFunctionCall\(\w+_kernel_packed.*\n(?:.*\n){2}", source)
    assert kernel_call(source.replace(kernel_launch[0], kernel_launch[0] * 2, 1)) is None
    integer = call.tensors.index(-1)
    as_float = source.replace(
        f"(((TVMFFIAny*)stack_ffi_any)[{integer}].type_index) = 1;", f"(((TVMFFIAny*)stack_ffi_any)[{integer}].type_index) = 3;"
    )
    assert as_float != source and kernel_call(as_float) is None
    pointer = re.search(r"\[0\]\.v_ptr\) = (\w+);", source)[1]
    elsewhere = source.replace(f"[0].v_ptr) = {pointer};", "[0].v_ptr) = stack_ffi_any;")
    assert kernel_call(elsewhere) is None
