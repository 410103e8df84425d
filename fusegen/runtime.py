"""What a generated kernel needs at call time: argument checks, output allocation, the program routed to
the call's token count, compiled once.

Checks run before any launch, so a wrong call fails with a sentence rather than a CUDA error or a
silent out-of-bounds read.
"""

from __future__ import annotations

import json
import operator
import os
import threading
from collections import namedtuple
from functools import partial, reduce
from pathlib import Path
from typing import NamedTuple

import torch
from torch._C._dynamo.guards import TensorGuards

from . import native
from .model import HOPPER_SMS, padded_tokens

# Vector loads of 16 bytes need every row to start on a 16-byte boundary.
ALIGNMENT = 16
# A kernel's shared scratch is a few hundred bytes (per-warp partials, the RoPE span, cos/sin); letting
# TileLang overlay those buffers saves nothing and costs a write-after-read barrier wherever one
# buffer's last read precedes the next one's first write: two of five barriers per row in the fp8 chain.
PASS_CONFIGS = {"tl.disable_shared_memory_reuse": True}


def sm_count() -> int:
    """SMs of the current CUDA device: a stream program sizes its persistent grid from it when it is built
    (one wave of resident blocks on any Hopper part); HOPPER_SMS where no GPU is visible."""
    if not torch.cuda.is_available():
        return HOPPER_SMS
    return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count


def compile_program(program, target):
    import tilelang

    # tvm_ffi, whatever TILELANG_EXECUTION_BACKEND says: the launcher calls its executable directly
    # (executable_of), and of TileLang's CUDA backends it costs the least per call (12.5 µs against
    # nvrtc's 16.8 and cython's 65.6, measured on the H200 host).
    return tilelang.compile(program(), target=target, execution_backend="tvm_ffi", pass_configs=PASS_CONFIGS)


class MixedKernelError(ImportError):
    """A generated kernel directory whose files come from different builds."""


def check_identity(package_file: str, identity: str) -> None:
    """Raises MixedKernelError unless the files a kernel package is used through (kernel.py, reference.py
    and plan.json, which the tests read) beside `package_file` record `identity`. A build killed while
    moving files can leave kernel.py of one build beside reference.py of another, which would import and
    run without a word. Reads two header lines per module and plan.json."""
    directory = Path(package_file).parent
    found = {}
    for file in ("kernel.py", "reference.py"):
        try:
            with open(directory / file, encoding="utf-8") as handle:
                handle.readline()
                found[file] = handle.readline().rstrip("\n").split("identity: ", 1)[-1]
        except (OSError, UnicodeDecodeError):
            found[file] = None
    try:
        found["plan.json"] = json.loads((directory / "plan.json").read_text(encoding="utf-8")).get("identity")
    except (OSError, ValueError, AttributeError):
        found["plan.json"] = None
    mismatched = {file: other for file, other in found.items() if other != identity}
    if mismatched:
        files = ", ".join(f"{file}: {other or 'missing or unreadable'}" for file, other in mismatched.items())
        raise MixedKernelError(
            f"{directory} mixes files of different fusegen builds (__init__.py: {identity}; {files}); "
            "a build was interrupted while replacing them: run `fusegen build` to complete it"
        )


class TensorSpec(NamedTuple):
    name: str
    dtype: torch.dtype
    shape: tuple  # ints, and "m" for the token count
    bound: int | None = None  # an index input: every value must lie in [0, bound) (checked in debug mode)
    layout: str = "row"  # model.Tensor.layout: "row" (contiguous) | "column" (tokens fastest, padded)


def shape_of(spec: TensorSpec, tokens) -> tuple:
    return tuple(tokens if d == "m" else d for d in spec.shape)


def column_strides(spec: TensorSpec, tokens) -> tuple:
    """The strides of a column-major (M, n) output: (1, M padded to 16 bytes), the layout of DeepGEMM's
    get_col_major_tma_aligned_tensor."""
    return (1, padded_tokens(tokens, spec.dtype.itemsize))


def strides_of(spec: TensorSpec, tokens) -> tuple:
    """The strides of an output as the kernel writes it (contiguous, or column_strides); `tokens` may be
    symbolic (the fake implementation)."""
    if spec.layout == "column":
        return column_strides(spec, tokens)
    shape = shape_of(spec, tokens)
    return tuple(reduce(operator.mul, shape[k + 1 :], 1) for k in range(len(shape)))


def allocate(spec: TensorSpec, tokens, device) -> torch.Tensor:
    """An output laid out as the kernel writes it; `tokens` may be symbolic (the fake implementation)."""
    return torch.empty_strided(shape_of(spec, tokens), strides_of(spec, tokens), dtype=spec.dtype, device=device)


def column_major(tensor: torch.Tensor) -> torch.Tensor:
    """An (M, n) tensor copied into the column layout: the references return column outputs so."""
    return allocate(TensorSpec("", tensor.dtype, ("m", tensor.shape[1]), layout="column"), tensor.shape[0], tensor.device).copy_(tensor)


def output_tuple(outputs: tuple[TensorSpec, ...]):
    return namedtuple("Outputs", [o.name for o in outputs])


# FUSEGEN_DEBUG=1: every launch first checks that each index input (RoPE's positions) lies within the
# table it indexes. Off by default: the check reads the tensor's min and max back to the host, a device
# sync per call; an index out of range otherwise reads another row of memory or faults.
DEBUG = os.environ.get("FUSEGEN_DEBUG") == "1"


class KernelArgumentError(ValueError):
    """A generated kernel was called with tensors it cannot run on."""


class Launcher:
    """Validates arguments, allocates outputs, picks the program routed to the call's token count and
    compiles each program once per process, the first time a call needs it.

    A call goes through the kernel's torch ops (`register_ops`), so torch.compile sees an op with a fake
    implementation instead of tracing into this class: the functional op allocates the outputs, its
    out variant writes into preallocated ones."""

    def __init__(self, name, identity, routes, target, inputs, outputs, output_type, tokens, most_tokens):
        self.name = name
        self.identity = identity
        self.routes = routes  # ((first tokens, last tokens or None, program), ...) ascending
        self.target = target
        self.inputs = inputs
        self.outputs = outputs
        self.output_type = output_type
        self.tokens = tokens
        self.most_tokens = most_tokens  # the kernels count tokens in int32 (model.Plan.most_tokens)
        self.compilations = 0
        self._compiled = {}  # program -> compiled kernel; routes may share a program
        self._launches = {}  # program -> its Launch
        self._admitted = {}  # signature (see signature()) of a call that passed every check -> its Admitted
        self._armed = {}  # (inputs, tensors, tokens) -> the Armed of the last signature kernel(...) armed there
        self._lock = threading.Lock()
        self.op, self.op_out = register_ops(self)

    @property
    def programs(self) -> list:
        """The distinct programs, in the order of the routes that first use them."""
        seen = []
        for _, _, program in self.routes:
            if program not in seen:
                seen.append(program)
        return seen

    def route_index(self, tokens: int) -> int:
        for index, (_, last, _) in enumerate(self.routes):
            if last is None or tokens <= last:
                return index
        raise AssertionError(f"{self.name}: no route serves {tokens} tokens")  # routes end with last = None

    def compiled(self, tokens: int):
        """The compiled program for this token count; the count is dynamic within a program, so one
        compilation per program serves every call."""
        program = self.routes[self.route_index(tokens)][2]
        compiled = self._compiled.get(program)
        if compiled is None:
            with self._lock:
                compiled = self._compiled.get(program)
                if compiled is None:
                    compiled = self._compiled[program] = compile_program(program, self.target)
                    self.compilations += 1
        return compiled

    def _fail(self, message: str):
        raise KernelArgumentError(f"{self.name}: {message}")

    def _check_type(self, spec: TensorSpec, tensor, tokens, role: str) -> None:
        if not isinstance(tensor, torch.Tensor):
            self._fail(f"{role} '{spec.name}' must be a torch.Tensor, got {type(tensor).__name__}")
        if tensor.dtype != spec.dtype:
            self._fail(f"{role} '{spec.name}' must be {spec.dtype}, got {tensor.dtype}")
        shape = shape_of(spec, tokens)
        if tuple(tensor.shape) != shape:
            self._fail(f"{role} '{spec.name}' must have shape {shape}, got {tuple(tensor.shape)}")

    def _check_memory(self, spec: TensorSpec, tensor, tokens, role: str) -> None:
        if spec.layout == "column":
            strides = column_strides(spec, tokens)
            if tuple(tensor.stride()) != strides:
                self._fail(
                    f"{role} '{spec.name}' must be column-major with strides {strides} (tokens padded to 16 bytes), "
                    f"got strides {tuple(tensor.stride())}; allocate it with torch.empty_strided({shape_of(spec, tokens)}, {strides})"
                )
        elif not tensor.is_contiguous():
            self._fail(f"{role} '{spec.name}' must be contiguous (got strides {tuple(tensor.stride())}); call .contiguous()")
        if tensor.numel() and tensor.data_ptr() % ALIGNMENT:
            self._fail(f"{role} '{spec.name}' must start on a {ALIGNMENT}-byte boundary (a view at an offset is not)")

    def _check_device(self, spec: TensorSpec, tensor, device, role: str) -> None:
        if tensor.device.type != "cuda":
            self._fail(f"{role} '{spec.name}' must be on a CUDA device, got {tensor.device}")
        if tensor.device != device:
            self._fail(f"{role} '{spec.name}' is on {tensor.device} but '{self.inputs[0].name}' is on {device}")

    def _check_out(self, out) -> None:
        # Only a sequence of the outputs in order: a tensor also has a len() and would be split into rows,
        # and a generator would be used up by the checks before the launch.
        names = ", ".join(s.name for s in self.outputs)
        expected = f"an Outputs, tuple or list of {len(self.outputs)} tensors ({names})"
        if not isinstance(out, (tuple, list)):
            self._fail(f"out must be {expected}, got {type(out).__name__}")
        if len(out) != len(self.outputs):
            self._fail(f"out must be {expected}, got {len(out)} item(s)")

    def _tokens_of(self, args) -> int:
        if len(args) != len(self.inputs):
            names = ", ".join(s.name for s in self.inputs)
            self._fail(f"takes {len(self.inputs)} tensors ({names}), got {len(args)}")
        first = args[0]
        if not isinstance(first, torch.Tensor) or first.dim() != len(self.inputs[0].shape):
            self._fail(f"input '{self.inputs[0].name}' must be a 2-D tensor (tokens, {self.inputs[0].shape[1]})")
        tokens = first.shape[0]
        if self.tokens is not None and tokens != self.tokens:
            self._fail(f"was generated for exactly {self.tokens} tokens (spec `tokens`), got {tokens}")
        if tokens > self.most_tokens:
            # The int32 token index would wrap: rows left unwritten, or written where they do not belong.
            self._fail(f"counts at most {self.most_tokens} tokens (its token index is a 32-bit int), got {tokens}")
        return tokens

    def check(self, args, out=None) -> None:
        """Every check of a call, in the order its sentences name problems; raises KernelArgumentError."""
        tokens = self._tokens_of(args)
        device = args[0].device
        for spec, tensor in zip(self.inputs, args):
            self._check_type(spec, tensor, tokens, "input")
            self._check_memory(spec, tensor, tokens, "input")
        if out is not None:
            self._check_out(out)
        for spec, tensor in zip(self.outputs, out or ()):
            self._check_type(spec, tensor, tokens, "output")
            self._check_memory(spec, tensor, tokens, "output")
        for role, specs, tensors in (("input", self.inputs, args), ("output", self.outputs, out or ())):
            for spec, tensor in zip(specs, tensors):
                self._check_device(spec, tensor, device, role)

    def _check_traced(self, args, out) -> None:
        """The checks a fake tensor can answer (shapes and dtypes): under torch.compile they run while
        tracing; memory and devices are checked by the real op when it runs."""
        tokens = self._tokens_of(args)
        for role, specs, tensors in (("input", self.inputs, args), ("output", self.outputs, out)):
            for spec, tensor in zip(specs, tensors):
                self._check_type(spec, tensor, tokens, role)

    def _takes(self, args, out) -> bool:
        """Whether the ops can take these arguments at all (tensors, as many as they declare); anything
        else fails in torch's argument parser, so check() explains it instead."""
        if len(args) != len(self.inputs):
            return False
        for arg in args:
            if not isinstance(arg, torch.Tensor):
                return False
        if out is None:
            return True
        if not isinstance(out, (tuple, list)) or len(out) != len(self.outputs):
            return False
        for tensor in out:
            if not isinstance(tensor, torch.Tensor):
                return False
        return True

    def __call__(self, *args, out=None):
        """kernel(...). A call that matches a signature armed for it (see Armed) launches from here; any
        other call (the first of a signature, a traced call, a tensor subclass, a call autograd or a dispatch
        mode must see, a bad call) goes through the torch op, whose implementation checks it in full, and
        then arms its signature."""
        direct = not torch.compiler.is_compiling() and not torch._C._len_torch_dispatch_stack()
        matched = False
        if direct:
            tensors = args if out is None else args + tuple(out) if isinstance(out, (tuple, list)) else None
            try:
                armed = self._armed.get((len(args), len(tensors), tensors[0].shape[0]))
            except (TypeError, IndexError, AttributeError):  # not a sequence of tensors: the op's checks say why
                armed = None
            matched = armed is not None and armed.guards.check(*tensors)
            if matched and not (armed.records_grad and torch.is_grad_enabled()):
                if out is None:
                    results = armed.launch.run_shared(*args)
                    if results is not None:
                        return tuple.__new__(self.output_type, results)
                elif armed.launch.run_out(*tensors):
                    return tuple.__new__(self.output_type, out)
        if not self._takes(args, out):
            self.check(args, out)  # raises: every call _takes refuses breaks one of the checks
        if out is None:
            results = self.op(*args)
            outputs = self.output_type(results) if len(self.outputs) == 1 else self.output_type(*results)
        else:
            self.op_out(*args, *out)
            outputs = self.output_type(*out)
        if direct and not matched:
            self._arm(args, tensors)
        return outputs

    def _arm(self, args, tensors) -> None:
        """Arms the signature of a call the op has just run, for kernel(...)'s direct launch — only one the op's
        implementation admitted itself, so never a tensor subclass that handled the op its own way. Zero
        tokens (nothing to launch) and debug mode (index checks before each launch) stay with the op."""
        admitted = self._admitted.get(signature(len(args), tensors))
        if admitted is None or admitted.launch is None or DEBUG:
            return
        remember(self._armed, (len(args), len(tensors), admitted.tokens), Armed(tensors, admitted))

    def _admit(self, tensors, args, out) -> Admitted:
        """The Admitted of a call, after check() the first time its signature is seen: shapes, strides,
        dtypes and devices decide every check but alignment, which depends on the addresses and is looked
        at on every call."""
        key = signature(len(args), tensors)
        admitted = self._admitted.get(key)
        if admitted is None:
            self.check(args, out)
            tokens = args[0].shape[0]
            admitted = Admitted(tokens, self._launch_of(tokens) if tokens else None)
            remember(self._admitted, key, admitted)
        if not aligned(tensors):
            self.check(args, out)  # raises unless the misaligned tensor is empty (nothing to load)
        return admitted

    def check_indices(self, args) -> None:
        """Debug mode: every index input's values within [0, bound); one min/max per index tensor (a sync)."""
        for spec, tensor in zip(self.inputs, args):
            if spec.bound is None or not tensor.numel():
                continue
            low, high = int(tensor.min()), int(tensor.max())
            if low < 0 or high >= spec.bound:
                self._fail(
                    f"input '{spec.name}' holds values from {low} to {high}; it indexes {spec.bound} rows, so each must lie in [0, {spec.bound})"
                )

    def _launch_of(self, tokens: int) -> Launch:
        """The Launch of the program routed to this token count, compiled on first need."""
        program = self.routes[self.route_index(tokens)][2]
        launch = self._launches.get(program)
        if launch is None:
            compiled = self.compiled(tokens)
            launch = self._launches[program] = Launch(executable_of(compiled), self.outputs, partial(native.kernel_of, compiled))
        return launch

    def run(self, *args):
        """The functional op: checks, allocates the outputs and launches."""
        admitted = self._admit(args, args, None)
        if admitted.launch is None:  # zero tokens: nothing to run
            results = [allocate(spec, 0, args[0].device) for spec in self.outputs]
        else:
            if DEBUG:
                self.check_indices(args)
            results = admitted.launch.run(*args)
        return results[0] if len(results) == 1 else results

    def run_out(self, *tensors):
        """The out variant: checks and launches into the caller's outputs."""
        args, out = tensors[: len(self.inputs)], tensors[len(self.inputs) :]
        admitted = self._admit(tensors, args, out)
        if admitted.launch is not None:
            if DEBUG:
                self.check_indices(args)
            admitted.launch.run_out(*tensors)

    def fake(self, *args):
        """The functional op on fake tensors: the outputs' shapes, dtypes and strides, nothing run."""
        self._check_traced(args, ())
        tokens, device = args[0].shape[0], args[0].device
        results = [allocate(spec, tokens, device) for spec in self.outputs]
        return results[0] if len(results) == 1 else tuple(results)

    def fake_out(self, *tensors):
        self._check_traced(tensors[: len(self.inputs)], tensors[len(self.inputs) :])


# A server that sees every token count would otherwise grow the set of admitted signatures without bound;
# refilling it costs one full check per signature.
ADMITTED_SIGNATURES = 4096


def remember(cache: dict, key, value) -> None:
    if len(cache) >= ADMITTED_SIGNATURES:
        cache.clear()
    cache[key] = value


# C-level getters: a call's signature is read in a few interpreter steps (scripts/host_cost_cpu.py).
# The class is part of it: only the types that reached the op's implementation (tensors and parameters,
# never a fake or wrapper subclass without storage) are ever admitted.
_CLASS_SHAPE_DTYPE_DEVICE = operator.attrgetter("__class__", "shape", "dtype", "device")
_REQUIRES_GRAD = operator.attrgetter("requires_grad")


def signature(inputs: int, tensors) -> tuple | None:
    """What every check of a call but alignment depends on: how many of the tensors are inputs, and each
    tensor's class, shape, dtype, device and strides. None for anything that is not all tensors."""
    try:
        return (inputs, *map(_CLASS_SHAPE_DTYPE_DEVICE, tensors), *map(torch.Tensor.stride, tensors))
    except (AttributeError, TypeError):
        return None


def aligned(tensors) -> bool:
    """Whether every tensor starts on an ALIGNMENT boundary: one OR of the addresses, not a test each."""
    return not reduce(operator.or_, map(torch.Tensor.data_ptr, tensors)) % ALIGNMENT


class Admitted:
    """What a call of one admitted signature needs, worked out once: its token count and the Launch of its
    program (None for zero tokens: nothing to launch)."""

    __slots__ = ("tokens", "launch")

    def __init__(self, tokens: int, launch: Launch | None):
        self.tokens, self.launch = tokens, launch


class Armed:
    """A signature the op admitted, armed for kernel(...) to launch without the op: `guards` checks a call's
    tensors against it in C++ (class, dispatch keys, dtype, device, requires_grad, shape and strides: every
    check but alignment), 0.4 µs for seven tensors where building and looking up the signature tuple cost
    2.6 (scripts/host_cost_cpu.py). TensorGuards is what torch.compile checks its graphs' inputs with; it
    holds no tensor. The grad mode is not in it: `records_grad` says whether a tensor requires grad, so that
    such a call goes through the op while grad is enabled."""

    __slots__ = ("guards", "launch", "records_grad")

    def __init__(self, tensors, admitted: Admitted):
        self.guards = TensorGuards(
            *tensors,
            dynamic_dims_sizes=[list(tensor.shape) for tensor in tensors],  # every size and stride fixed
            dynamic_dims_strides=[list(tensor.stride()) for tensor in tensors],
        )
        self.launch = admitted.launch
        self.records_grad = any(map(_REQUIRES_GRAD, tensors))


class Launch:
    """How a compiled program is called. `run(*inputs)` allocates its outputs, launches and returns them as a
    tuple, or returns None without launching where an input is misaligned: through the C++ launch path
    (fusegen.native: one C call allocates and launches) where it is available. `run_shared` is `run` for
    kernel(...) called directly, whose small outputs may share one allocation (a torch op's outputs must not
    alias each other; each output of kernel(...) is a view like those of torch.split). `run_out(*inputs,
    *outputs)` launches into the caller's tensors and returns True, or None where one is misaligned.
    `kernel()` gives the C++ path the program's kernel function (native.kernel_of), asked only there."""

    __slots__ = ("run", "run_shared", "run_out")

    def __init__(self, executable, outputs: tuple[TensorSpec, ...], kernel=lambda: None):
        if native.available():
            program, launch = native.register(executable, outputs, kernel()), native.launch()
            self.run = partial(launch, program, native.SEPARATE)
            self.run_shared = partial(launch, program, native.SHARED)
            self.run_out = partial(launch, program, native.INTO)
        else:
            self.run = self.run_shared = partial(_run_in_python, executable, outputs)
            self.run_out = partial(_run_out_in_python, executable)


def _run_in_python(executable, outputs: tuple[TensorSpec, ...], *args) -> tuple[torch.Tensor, ...] | None:
    if not aligned(args):
        return None
    tokens, device = args[0].shape[0], args[0].device
    results = tuple(allocate(spec, tokens, device) for spec in outputs)
    _call_on_device(executable, (*args, *results))
    return results


def _run_out_in_python(executable, *tensors) -> bool | None:
    if not aligned(tensors):
        return None
    _call_on_device(executable, tensors)
    return True


def _call_on_device(executable, tensors) -> None:
    """Runs the executable on the tensors' device and leaves the caller's current device as it was: the
    program's host code selects the tensors' device itself (TVM's __tvm_set_device) and never restores it.
    torch._C._cuda_getDevice is torch.cuda.current_device without its Python lazy-init frames; the tensors
    are on CUDA, so CUDA is initialised."""
    device_index = tensors[0].device.index
    if device_index == torch._C._cuda_getDevice():
        executable(*tensors)
    else:  # switching devices costs microseconds per call, so only when needed
        with torch.cuda.device(device_index):
            executable(*tensors)


def executable_of(compiled):
    """The compiled program's tvm_ffi entry function, which takes every argument, outputs included.
    TileLang's Python wrapper around it re-derives output shapes and scans its parameters on each call
    (12.5 µs per call measured on the H200 host, torch.add 9.4), and its executable's __call__ walks the
    module's import tree in Python on each call (runtime.Executable.jit, 7 µs on the CPU) before it looks
    up `main`: a launcher that passes every output itself needs none of that, so it calls `main` itself."""
    return compiled.adapter.get_exportable_executable()["main"]


# Every kernel's ops live in one `fusegen` namespace, whichever module defines them.
_LIBRARY = torch.library.Library("fusegen", "FRAGMENT")
_SERVING: dict = {}  # op name -> the Launcher that runs it
_REGISTRATION = threading.Lock()


# The kernels read rows at a stride of hidden. Under torch.compile, Inductor hands a custom op its inputs with
# eager's strides unless the op asks for contiguous ones: a q sliced from a fused qkv projection would reach the
# op as a strided view and fail its check, where with the tag Inductor makes it contiguous (often by having the
# producer write it so). The out variant has none: its column-major Scale must keep its own strides. (The tag is
# torch's since 2.8; an older torch keeps the error, which names .contiguous().)
CONTIGUOUS_INPUTS = tuple(tag for tag in (getattr(torch.Tag, "needs_contiguous_strides", None),) if tag is not None)


def op_name(identity: str) -> str:
    """The op's name is the kernel's identity (name and content hash): variants of one kernel (another
    hidden size, other tuning) live side by side in a process, and a compiled graph that names an op
    never runs another build of it."""
    return identity.replace("-", "_")


def _schemas(launcher: Launcher, name: str) -> tuple[str, str]:
    inputs = ", ".join(f"Tensor {s.name}" for s in launcher.inputs)
    outputs = ", ".join(f"Tensor({chr(ord('a') + i)}!) {s.name}" for i, s in enumerate(launcher.outputs))
    returned = "Tensor" if len(launcher.outputs) == 1 else f"({', '.join(f'Tensor {s.name}' for s in launcher.outputs)})"
    return f"{name}({inputs}) -> {returned}", f"{name}.out({inputs}, {outputs}) -> ()"


def register_ops(launcher: Launcher):
    """Defines torch.ops.fusegen.<identity> (functional: returns new outputs) and its `.out` overload
    (writes into preallocated outputs, declared mutated), once per identity, and returns both overloads.

    torch.library.Library's define + impl, not custom_op: a call through custom_op's Python wrapper costs
    16.5 µs, through the dispatcher straight to the impl 1.9 µs (a no-op on the H200 host). The impls are
    registered for CPU too so that a call on CPU tensors fails with the launcher's sentence, not with
    torch's "could not run on the CPU backend". Importing a kernel twice (the same identity) serves the op
    from the newest Launcher, which compiles for it and counts its compilations."""
    name = op_name(launcher.identity)
    with _REGISTRATION:
        known = name in _SERVING
        _SERVING[name] = launcher
        if not known:
            functional, out_variant = _schemas(launcher, name)
            _LIBRARY.define(functional, tags=CONTIGUOUS_INPUTS)
            _LIBRARY.define(out_variant)
            for key in ("CPU", "CUDA"):
                _LIBRARY.impl(name, lambda *args: _SERVING[name].run(*args), key)
                _LIBRARY.impl(f"{name}.out", lambda *tensors: _SERVING[name].run_out(*tensors), key)
            torch.library.register_fake(f"fusegen::{name}", lambda *args: _SERVING[name].fake(*args), lib=_LIBRARY)
            torch.library.register_fake(f"fusegen::{name}.out", lambda *tensors: _SERVING[name].fake_out(*tensors), lib=_LIBRARY)
    packet = getattr(torch.ops.fusegen, name)
    return packet.default, packet.out
