"""What a generated kernel needs at call time: argument checks, output allocation, the program routed to
the call's token count, compiled once.

Checks run before any launch, so a wrong call fails with a sentence rather than a CUDA error or a
silent out-of-bounds read.
"""
from __future__ import annotations

import json
import threading
from collections import namedtuple
from pathlib import Path
from typing import NamedTuple

import torch

from .model import HOPPER_SMS

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

    return tilelang.compile(program(), target=target, pass_configs=PASS_CONFIGS)


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


def output_tuple(outputs: tuple[TensorSpec, ...]):
    return namedtuple("Outputs", [o.name for o in outputs])


class KernelArgumentError(ValueError):
    """A generated kernel was called with tensors it cannot run on."""


class Launcher:
    """Validates arguments, allocates outputs, picks the program routed to the call's token count and
    compiles each program once per process, the first time a call needs it."""

    def __init__(self, name, identity, routes, target, inputs, outputs, output_type, tokens):
        self.name = name
        self.identity = identity
        self.routes = routes  # ((first tokens, last tokens or None, program), ...) ascending
        self.target = target
        self.inputs = inputs
        self.outputs = outputs
        self.output_type = output_type
        self.tokens = tokens
        self.compilations = 0
        self._compiled = {}  # program -> compiled kernel; routes may share a program
        self._lock = threading.Lock()

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

    def _expected_shape(self, spec: TensorSpec, tokens: int) -> tuple[int, ...]:
        return tuple(tokens if d == "m" else d for d in spec.shape)

    def _check_form(self, spec: TensorSpec, tensor, tokens: int, role: str) -> None:
        if not isinstance(tensor, torch.Tensor):
            self._fail(f"{role} '{spec.name}' must be a torch.Tensor, got {type(tensor).__name__}")
        if tensor.dtype != spec.dtype:
            self._fail(f"{role} '{spec.name}' must be {spec.dtype}, got {tensor.dtype}")
        shape = self._expected_shape(spec, tokens)
        if tuple(tensor.shape) != shape:
            self._fail(f"{role} '{spec.name}' must have shape {shape}, got {tuple(tensor.shape)}")
        if not tensor.is_contiguous():
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

    def __call__(self, *args, out=None):
        if len(args) != len(self.inputs):
            names = ", ".join(s.name for s in self.inputs)
            self._fail(f"takes {len(self.inputs)} tensors ({names}), got {len(args)}")
        first = args[0]
        if not isinstance(first, torch.Tensor) or first.dim() != len(self.inputs[0].shape):
            self._fail(f"input '{self.inputs[0].name}' must be a 2-D tensor (tokens, {self.inputs[0].shape[1]})")
        tokens = first.shape[0]
        if self.tokens is not None and tokens != self.tokens:
            self._fail(f"was generated for exactly {self.tokens} tokens (spec `tokens`), got {tokens}")
        device = first.device
        for spec, tensor in zip(self.inputs, args):
            self._check_form(spec, tensor, tokens, "input")
        if out is not None:
            self._check_out(out)
        for spec, tensor in zip(self.outputs, out or ()):
            self._check_form(spec, tensor, tokens, "output")
        for role, specs, tensors in (("input", self.inputs, args), ("output", self.outputs, out or ())):
            for spec, tensor in zip(specs, tensors):
                self._check_device(spec, tensor, device, role)
        results = list(out) if out is not None else [
            torch.empty(self._expected_shape(s, tokens), dtype=s.dtype, device=device) for s in self.outputs
        ]
        if tokens:
            program = self.compiled(tokens)
            if device.index == torch.cuda.current_device():
                program(*args, *results)
            else:  # switching devices costs microseconds per call, so only when needed
                with torch.cuda.device(device):
                    program(*args, *results)
        return self.output_type(*results)
