"""What a kernel call costs the host in Python, step by step, measured on the CPU (no GPU needed): the
compiled program is replaced by a no-op and CPU tensors pass the device check, so what remains is
fusegen's own Python and torch's dispatcher, against torch.add(x, x) on the same 8-token CPU tensors.

    PYTHONPATH=. python scripts/host_cost_cpu.py [KERNEL ...]   (default: three example kernels)

For each step of kernel(...)'s direct launch it prints the way it was done before the launcher armed
signatures (issue 15) beside the way it is done now, both timed in this run, then the whole calls. The
program entry is timed on the real compiled program (compiled for sm_90a here, not run): before, each
call went through TileLang's executable, whose __call__ runs jit() — a Python walk of the module's
import tree — and then looks `main` up; now the launcher holds `main` itself. Not measurable without
CUDA: torch.cuda.current_device() (now torch._C._cuda_getDevice(), which skips its lazy-init frames).

The stubs are for this measurement only: a real call needs CUDA tensors and a compiled program."""

from __future__ import annotations

import importlib
import operator
import sys

import torch

from fusegen import checking, native, runtime
from fusegen.bench import per_call_us

KERNELS = ("rms_norm_rope_quant_fused", "layer_norm_fwd", "rms_norm")
TOKENS = 8
CALLS = 20000  # CPU calls are short: more per round than on the GPU for a stable median


def stub_the_gpu() -> None:
    import tvm_ffi.testing  # noqa: F401  (registers testing.nop, a C++ function that ignores its arguments)

    runtime.compile_program = lambda program, target: None
    runtime.executable_of = lambda compiled: tvm_ffi.get_global_func("testing.nop")
    native.kernel_of = lambda compiled: None  # the program itself is the no-op: no kernel function to call
    runtime.Launcher._check_device = lambda self, spec, tensor, device, role: None
    torch._C._cuda_getDevice = lambda: None  # a CPU tensor's device index, so no device switch


def no_op_op():
    """The dispatcher's floor: an op defined like fusegen's (Library define + impl) that does nothing."""
    library = torch.library.Library("fusegen_host_cost", "FRAGMENT")
    library.define("no_op(Tensor x) -> ()")
    library.impl("no_op", lambda x: None, "CPU")
    return library, torch.ops.fusegen_host_cost.no_op.default


def program_entry(name: str) -> dict[str, tuple]:
    """Finding the program's entry on each call, before (runtime.Executable: jit(), then `main`) and now
    (none: the launcher holds `main`)."""
    program = importlib.import_module(f"generated.{name}").launcher.compiled(TOKENS).adapter.get_exportable_executable()
    from tvm import runtime as tvm_runtime  # the tvm that TileLang bundles, on the path once it is imported

    executable = program if isinstance(program, tvm_runtime.Executable) else tvm_runtime.Executable(program)
    return {"program entry (fresh compile)": (lambda: executable.jit().main, None)}


def steps(module, args, out) -> dict[str, tuple]:
    """Each step of the direct launch: (before, now); None where the step is gone."""
    launcher = module.launcher
    tensors = (*args, *out)
    armed = launcher._armed[len(args), len(tensors), TOKENS]
    requires_grad = operator.attrgetter("requires_grad")
    empties = tuple((runtime.shape_of(spec, TOKENS), runtime.strides_of(spec, TOKENS), spec.dtype) for spec in module.OUTPUTS)
    device = args[0].device
    program = armed.launch.run_out
    return {
        "which signature (out=)": (
            lambda: (
                launcher._admitted.get(runtime.signature(len(args), tensors))
                and not (torch.is_grad_enabled() and any(map(requires_grad, tensors)))
            ),
            lambda: (
                launcher._armed.get((len(args), len(tensors), tensors[0].shape[0])).guards.check(*tensors)
                and not (armed.records_grad and torch.is_grad_enabled())
            ),
        ),
        "alignment (out=)": (lambda: runtime.aligned(tensors), None),  # now inside the C++ launch
        "allocate outputs and launch": (
            lambda: program(*args, *[torch.empty_strided(shape, strides, dtype=dtype, device=device) for shape, strides, dtype in empties]),
            lambda: armed.launch.run(*args),
        ),
    }


def wholes(module, args, out, no_op) -> dict[str, object]:
    x = args[0]
    launcher = module.launcher
    return {
        "torch.add(x, x)": lambda: torch.add(x, x),
        "no-op op (dispatcher)": lambda: no_op(x),
        "kernel()": lambda: module.kernel(*args),
        "kernel(out=)": lambda: module.kernel(*args, out=out),
        "op": lambda: launcher.op(*args),
        "op.out": lambda: launcher.op_out(*args, *out),
    }


def report(name: str, entry: dict[str, tuple], no_op) -> None:
    module = importlib.import_module(f"generated.{name}")
    args = checking.random_inputs(module, TOKENS, torch.Generator().manual_seed(0), device="cpu")
    out = checking.poisoned_outputs(module, TOKENS, device="cpu")
    module.kernel(*args)  # arms both signatures (the first call of each goes through the op)
    module.kernel(*args, out=out)
    print(f"\n{name}, {TOKENS} tokens, CPU, program stubbed: µs per call")
    print(f"  {'step of the direct launch':<30} {'before':>7} {'now':>7}")
    for label, (before, now) in {**steps(module, args, out), **entry}.items():
        costs = [f"{per_call_us(call, calls=CALLS):7.2f}" if call else f"{'gone':>7}" for call in (before, now)]
        print(f"  {label:<30} {costs[0]} {costs[1]}")
    costs = {label: per_call_us(call, calls=CALLS) for label, call in wholes(module, args, out, no_op).items()}
    add = costs["torch.add(x, x)"]
    print(f"  {'whole call':<30} {'µs':>7} {'× add':>7}")
    for label, us in costs.items():
        print(f"  {label:<30} {us:7.2f} {us / add:6.2f}×")


def main(names) -> None:
    entries = {name: program_entry(name) for name in names}  # compiles: before the stubs
    stub_the_gpu()
    _library, no_op = no_op_op()
    for name in names:
        report(name, entries[name], no_op)


if __name__ == "__main__":
    main(sys.argv[1:] or KERNELS)
