"""The lean call path of a generated kernel, on the CPU: the compiled program is a recording stub and CPU
tensors pass the device check, so which path a call takes is observable without a GPU. Each test runs on
both launch paths: the C++ one (fusegen.native, calling a compiled stub program) and the Python one."""

from __future__ import annotations

import importlib

import pytest
import torch
from stub_program import StubProgram
from torch.utils._python_dispatch import TorchDispatchMode

from fusegen import checking, native, runtime
from fusegen.bench import per_call_us
from fusegen.native.kernel_call import KernelCall
from fusegen.runtime import KernelArgumentError, TensorSpec, allocate, strides_of

TOKENS = 8


@pytest.fixture(scope="module")
def stub_program(tmp_path_factory):
    return StubProgram(tmp_path_factory.mktemp("stub"))


@pytest.fixture(params=["C++", "C++ kernel call", "Python"])
def stubbed(request, monkeypatch, stub_program):
    """A fresh launcher of the fp8 example whose program records its launches (the data pointers of each
    call's tensors, `launches()`), and whose ops count calls; on the C++ launch path (calling the program, or
    its kernel function with each tensor's data pointer in turn), and on the Python one."""
    if request.param.startswith("C++"):
        assert native.available(), native.unavailable()
        stub_program.inputs = 4
        first = stub_program.launches
        monkeypatch.setattr(runtime, "executable_of", lambda compiled: stub_program.function)
        tensors = 7  # the fp8 example's inputs and outputs
        call = KernelCall("stub_kernel", tuple(range(tensors)), ((),) * tensors)
        kernel = (stub_program.kernel, call) if request.param == "C++ kernel call" else None
        monkeypatch.setattr(native, "kernel_of", lambda compiled: kernel)

        def launches():
            return stub_program.calls(since=first)
    else:
        recorded = []
        monkeypatch.setattr(native, "available", lambda: False)
        monkeypatch.setattr(
            runtime, "executable_of", lambda compiled: lambda *tensors: recorded.append(tuple(t.data_ptr() for t in tensors))
        )

        def launches():
            return recorded

    monkeypatch.setattr(runtime, "compile_program", lambda program, target: program)
    monkeypatch.setattr(runtime.Launcher, "_check_device", lambda self, spec, tensor, device, role: None)
    monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: None, raising=False)  # a CPU tensor's device index
    module = importlib.import_module("generated.rms_norm_rope_quant_fused.kernel")
    launcher = runtime.Launcher(
        module.NAME,
        module.IDENTITY,
        module.ROUTES,
        module.TARGET,
        module.INPUTS,
        module.OUTPUTS,
        module.Outputs,
        module.TOKENS,
        module.MOST_TOKENS,
    )
    through_op = []
    op, op_out = launcher.op, launcher.op_out
    launcher.op = lambda *args: through_op.append("op") or op(*args)
    launcher.op_out = lambda *tensors: through_op.append("op.out") or op_out(*tensors)
    args = checking.random_inputs(module, TOKENS, torch.Generator().manual_seed(0), device="cpu")
    out = checking.poisoned_outputs(module, TOKENS, device="cpu")
    yield launcher, args, out, launches, through_op
    runtime._SERVING[runtime.op_name(module.IDENTITY)] = module.launcher


def test_a_signature_that_passed_the_checks_launches_without_the_op(stubbed):
    launcher, args, out, launches, through_op = stubbed
    for _ in range(3):
        outputs = launcher(*args)
        written = launcher(*args, out=out)
    assert through_op == ["op", "op.out"]  # the first call of each signature only
    assert len(launches()) == 6
    assert type(outputs) is launcher.output_type and type(written) is launcher.output_type
    assert all(a is b for a, b in zip(written, out))
    assert [(t.shape, t.dtype, t.stride()) for t in outputs] == [(t.shape, t.dtype, t.stride()) for t in out]
    calls = launches()
    assert calls[-2] == tuple(t.data_ptr() for t in (*args, *outputs))  # launched into the outputs it returned
    assert calls[-1] == tuple(t.data_ptr() for t in (*args, *out))


def test_an_admitted_signature_still_gets_every_check(stubbed):
    launcher, args, out, launches, through_op = stubbed
    launcher(*args, out=out)
    with pytest.raises(KernelArgumentError, match="output 'q' must be torch.float8_e4m3fn, got torch.float16"):
        launcher(*args, out=(out[0], out[0], out[2]))
    storage = torch.empty(TOKENS * 4096 + 1, dtype=torch.float16)
    misaligned = storage[1:].view(TOKENS, 4096)
    with pytest.raises(KernelArgumentError, match="input 'x' must start on a 16-byte boundary"):
        launcher(misaligned, *args[1:], out=out)
    with pytest.raises(KernelArgumentError, match="out must be an Outputs, tuple or list of 3 tensors"):
        launcher(*args, out=out[0])
    assert len(launches()) == 1


def test_calls_autograd_or_a_dispatch_mode_must_see_go_through_the_op(stubbed):
    launcher, args, out, launches, through_op = stubbed
    launcher(*args)
    weight = torch.nn.Parameter(args[1])
    launcher(args[0], weight, *args[2:])
    with torch.no_grad():
        launcher(args[0], weight, *args[2:])  # nothing for autograd to see: straight to the program

    seen = []

    class Recording(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    with Recording():
        launcher(*args)
    assert through_op == ["op", "op", "op"]
    assert any(name.startswith("fusegen.") for name in seen)
    assert len(launches()) == 4


def test_an_armed_call_reads_no_signature_and_no_python_device_query(stubbed, monkeypatch):
    """The direct launch checks an armed signature in C++ (Armed.guards) and asks torch._C for the current
    device: no signature tuple, no torch.cuda.current_device and its lazy-init frames."""
    launcher, args, out, launches, through_op = stubbed
    launcher(*args)
    launcher(*args, out=out)
    signatures = []
    monkeypatch.setattr(runtime, "signature", lambda *key: signatures.append(key))
    monkeypatch.setattr(torch.cuda, "current_device", lambda: pytest.fail("torch.cuda.current_device() called"))
    for _ in range(3):
        launcher(*args)
        launcher(*args, out=out)
    assert signatures == []
    assert through_op == ["op", "op.out"] and len(launches()) == 8


def test_each_token_count_is_armed_once(stubbed):
    launcher, args, out, launches, through_op = stubbed
    module = importlib.import_module("generated.rms_norm_rope_quant_fused")
    fewer = checking.random_inputs(module, 5, torch.Generator().manual_seed(1), device="cpu")
    for _ in range(3):
        launcher(*args)
        launcher(*fewer)
    assert through_op == ["op", "op"] and len(launches()) == 6


def test_outputs_passed_as_inputs_never_take_the_out_variants_launch(stubbed):
    launcher, args, out, launches, through_op = stubbed
    launcher(*args, out=out)
    with pytest.raises(KernelArgumentError, match=r"takes 4 tensors \(x, weight, cos, sin\), got 7"):
        launcher(*args, *out)
    assert len(launches()) == 1


class Wrapped(torch.Tensor):
    """A wrapper subclass that handles every op itself (here: runs it on the tensor it wraps)."""

    handled = []

    @staticmethod
    def __new__(cls, inner):
        return torch.Tensor._make_wrapper_subclass(cls, inner.shape, strides=inner.stride(), dtype=inner.dtype, device=inner.device)

    def __init__(self, inner):
        self.inner = inner

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        cls.handled.append(str(func))

        def unwrap(value):
            return value.inner if isinstance(value, Wrapped) else value

        return func(*map(unwrap, args), **{key: unwrap(value) for key, value in (kwargs or {}).items()})


def test_a_subclass_that_handles_the_op_itself_is_never_armed(stubbed):
    """The op's implementation saw the wrapped tensor, never the wrapper: kernel(...) must keep handing the
    wrapper to the op, even once the wrapped signature is armed."""
    launcher, args, out, launches, through_op = stubbed
    launcher(*args)
    Wrapped.handled.clear()
    for _ in range(2):
        launcher(Wrapped(args[0]), *args[1:])
    assert through_op == ["op", "op", "op"]
    assert len(Wrapped.handled) == 2 and all(name.startswith("fusegen.") for name in Wrapped.handled)


def test_executable_of_is_the_programs_entry_function():
    """What the launcher calls is tvm_ffi's C entry itself, whether TileLang compiled the program in this
    process (a runtime.Executable, whose __call__ walks the module's import tree in Python on every call)
    or loaded it from its cache (a module, whose __call__ is a Python frame)."""
    from types import SimpleNamespace

    import tilelang  # noqa: F401  (puts the tvm that TileLang bundles on the path)
    import tvm_ffi
    from tvm import runtime as tvm_runtime

    program = importlib.import_module("generated.rms_norm_rope_quant_fused").launcher.compiled(TOKENS).adapter.get_exportable_executable()
    module = program.jit() if isinstance(program, tvm_runtime.Executable) else program
    for executable in (tvm_runtime.Executable(module), module):
        compiled = SimpleNamespace(adapter=SimpleNamespace(get_exportable_executable=lambda held=executable: held))
        assert isinstance(runtime.executable_of(compiled), tvm_ffi.Function)


@pytest.mark.parametrize("layout", ["row", "column"])
@pytest.mark.parametrize("tokens", [0, 1, 5, 8])
def test_precomputed_output_strides_are_the_allocated_ones(layout, tokens):
    for spec in (TensorSpec("o", torch.float32, ("m", 3), layout=layout), TensorSpec("o", torch.float16, ("m", 4096), layout=layout)):
        assert strides_of(spec, tokens) == allocate(spec, tokens, "cpu").stride()


def test_per_call_us_is_the_median_of_rounds_after_warmup(monkeypatch):
    calls, synchronized = [], []
    clock = iter([0.0, 0.002, 1.0, 1.001, 2.0, 2.009])  # rounds of 1000 calls: 2, 1 and 9 µs per call
    monkeypatch.setattr("fusegen.bench.time.perf_counter", lambda: next(clock))
    us = per_call_us(lambda: calls.append(1), calls=1000, rounds=3, warmup=5, synchronize=lambda: synchronized.append(1))
    assert us == pytest.approx(2.0)
    assert len(calls) == 5 + 3 * 1000
    assert len(synchronized) == 4  # before each round, and after the last


def test_calls_timed_together_take_turns_and_each_gets_the_median_of_its_rounds(monkeypatch):
    from fusegen.bench import per_call_us_together

    order, synchronized = [], []
    # µs per call of each timed stretch of 1000 calls, in the order they run: a b, b a, a b.
    round_us = iter([5, 7, 1, 3, 2, 4])
    ticks = []

    def clock():
        if len(ticks) % 2 == 0:
            ticks.append(0.0)
            return 0.0
        ticks.append(next(round_us) * 1e-3)
        return ticks[-1]

    monkeypatch.setattr("fusegen.bench.time.perf_counter", clock)
    us = per_call_us_together(
        {"a": lambda: order.append("a"), "b": lambda: order.append("b")},
        per_round=1000,
        rounds=3,
        warmup=5,
        synchronize=lambda: synchronized.append(1),
    )
    rounds = [order[10 + 1000 * i] for i in range(6)]
    assert rounds == ["a", "b", "b", "a", "a", "b"]  # the order rotates each round
    assert us == {"a": pytest.approx(3.0), "b": pytest.approx(4.0)}  # a: 5, 3, 2 µs; b: 7, 1, 4 µs
    assert len(order) == 10 + 6 * 1000 and len(synchronized) == 7


def test_bench_host_cost_times_each_call_into_its_field(monkeypatch):
    """The timing needs a GPU; what is checked here is which call each field of HostCost measures."""
    from types import SimpleNamespace

    from fusegen import bench

    timed = []
    x = torch.ones(TOKENS, 4)
    module = SimpleNamespace(
        kernel=lambda *args, out=None: timed.append("kernel(out=)" if out else "kernel()"),
        launcher=SimpleNamespace(name="k", compiled=lambda tokens: "compiled"),
    )
    monkeypatch.setattr(checking, "random_inputs", lambda module, tokens, generator: [x])
    monkeypatch.setattr(checking, "poisoned_outputs", lambda module, tokens: [x])
    monkeypatch.setattr(runtime, "executable_of", lambda compiled: lambda *tensors: timed.append(f"program of {compiled}"))
    monkeypatch.setattr(torch, "add", lambda a, b: timed.append("torch.add"))
    microseconds = {"kernel_us": 4.0, "kernel_out_us": 3.0, "program_us": 2.0, "add_us": 1.0}

    def together(calls, synchronize):
        return {field: calls[field]() or microseconds[field] for field in calls}

    monkeypatch.setattr(bench, "per_call_us_together", together)
    cost = bench.host_cost(module, TOKENS)
    assert timed == ["kernel()", "kernel(out=)", "program of compiled", "torch.add"]
    assert (cost.kernel, cost.tokens, cost.kernel_us, cost.kernel_out_us, cost.program_us, cost.add_us) == ("k", TOKENS, 4.0, 3.0, 2.0, 1.0)


def _bytes(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.contiguous().view(torch.uint8)


OUTPUT_LAYOUTS = (
    TensorSpec("y", torch.bfloat16, ("m", 4096)),
    TensorSpec("q", torch.float8_e4m3fn, ("m", 4096)),
    TensorSpec("scale", torch.float32, ("m", 32), layout="column"),
    TensorSpec("rstd", torch.float32, ("m",)),
    TensorSpec("exponent", torch.uint8, ("m", 3), layout="column"),
)


@pytest.mark.parametrize("share", [True, False])
@pytest.mark.parametrize("tokens", [1, 5, 8, 33, 300])
def test_the_cpp_launch_path_allocates_every_layout_as_the_kernel_writes_it(stub_program, tokens, share):
    """Each output the C++ path allocates has the shape, strides and dtype of runtime.allocate (column-major
    scales padded to 16 bytes included), starts on a 16-byte boundary, overlaps no other, is what the program
    was handed and holds what it wrote — whether it shares one allocation with its siblings (where allowed,
    for outputs of at most 1 MiB in all: up to 33 tokens here) or has its own."""
    assert native.available(), native.unavailable()
    program = native.register(stub_program.function, OUTPUT_LAYOUTS)
    stub_program.inputs = 2
    inputs = (torch.randn(tokens, 4096), torch.randn(4096))
    before = stub_program.launches
    results = native.launch()(program, native.SHARED if share else native.SEPARATE, *inputs)
    expected = [allocate(spec, tokens, "cpu") for spec in OUTPUT_LAYOUTS]
    assert [(r.shape, r.stride(), r.dtype) for r in results] == [(e.shape, e.stride(), e.dtype) for e in expected]
    assert stub_program.calls(since=before) == [tuple(t.data_ptr() for t in (*inputs, *results))]
    for position, result in enumerate(results, start=len(inputs)):
        assert bool((_bytes(result) == position).all()), OUTPUT_LAYOUTS[position - len(inputs)].name
    spans = sorted((r.data_ptr(), r.data_ptr() + e.untyped_storage().nbytes()) for r, e in zip(results, expected))
    assert all(start % runtime.ALIGNMENT == 0 for start, _ in spans)
    assert all(end <= next_start for (_, end), (next_start, _) in zip(spans, spans[1:]))
    storages = {r.untyped_storage().data_ptr() for r in results}
    assert len(storages) == (1 if share and tokens <= 33 else len(results))


def test_the_cpp_launch_path_launches_nothing_for_a_misaligned_input(stub_program):
    assert native.available(), native.unavailable()
    program = native.register(stub_program.function, OUTPUT_LAYOUTS)
    before = stub_program.launches
    x = torch.randn(8 * 4096 + 1)[1:].view(8, 4096)
    assert native.launch()(program, native.SHARED, x, torch.randn(4096)) is None
    assert stub_program.launches == before


@pytest.mark.parametrize("stubbed", ["C++"], indirect=True)
def test_only_kernel_calls_outside_the_op_share_an_allocation(stubbed):
    """A torch op's outputs must not alias each other (opcheck, and an error from torch 2.12): the op's
    outputs are separate allocations; kernel(...) launching directly returns views of one (small) block."""
    launcher, args, out, launches, through_op = stubbed
    through = launcher(*args)
    direct = launcher(*args)
    assert through_op == ["op"]
    assert len({t.untyped_storage().data_ptr() for t in through}) == len(through)
    assert len({t.untyped_storage().data_ptr() for t in direct}) == 1
    assert launches()[-1] == tuple(t.data_ptr() for t in (*args, *direct))
