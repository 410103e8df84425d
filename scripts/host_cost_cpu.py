"""What a kernel call costs the host in Python, layer by layer, measured on the CPU (no GPU needed): the
compiled program is replaced by a no-op and CPU tensors pass the device check, so what remains is
fusegen's own Python and torch's dispatcher, against torch.add(x, x) on the same 8-token CPU tensors.

    PYTHONPATH=. python scripts/host_cost_cpu.py [KERNEL ...]   (default: three example kernels)

The stubs are for this measurement only: a real call needs CUDA tensors and a compiled program."""

from __future__ import annotations

import importlib
import sys

import torch

from fusegen import checking, runtime
from fusegen.bench import per_call_us

KERNELS = ("rms_norm_rope_quant_fused", "layer_norm_fwd", "rms_norm")
TOKENS = 8
CALLS = 20000  # CPU calls are short: more per round than on the GPU for a stable median


def stub_the_gpu() -> None:
    runtime.compile_program = lambda program, target: None
    runtime.executable_of = lambda compiled: lambda *tensors: None
    runtime.Launcher._check_device = lambda self, spec, tensor, device, role: None
    torch._C._cuda_getDevice = lambda: None  # a CPU tensor's device index, so no device switch


def no_op_op():
    """The dispatcher's floor: an op defined like fusegen's (Library define + impl) that does nothing."""
    library = torch.library.Library("fusegen_host_cost", "FRAGMENT")
    library.define("no_op(Tensor x) -> ()")
    library.impl("no_op", lambda x: None, "CPU")
    return library, torch.ops.fusegen_host_cost.no_op.default


def layers(name: str, no_op) -> dict[str, float]:
    module = importlib.import_module(f"generated.{name}")
    launcher = module.launcher
    args = checking.random_inputs(module, TOKENS, torch.Generator().manual_seed(0), device="cpu")
    out = checking.poisoned_outputs(module, TOKENS, device="cpu")
    tensors = (*args, *out)
    x = args[0]
    module.kernel(*args)  # admits both signatures (the first call of each goes through the op)
    module.kernel(*args, out=out)
    admitted = launcher._admitted[runtime.signature(len(args), tensors)]
    calls = {
        "torch.add(x, x)": lambda: torch.add(x, x),
        "signature + lookup": lambda: launcher._admitted.get(runtime.signature(len(args), tensors)),
        "alignment": lambda: runtime.aligned(tensors),
        "allocate outputs": admitted.allocate,
        "no-op op (dispatcher)": lambda: no_op(x),
        "kernel()": lambda: module.kernel(*args),
        "kernel(out=)": lambda: module.kernel(*args, out=out),
        "op": lambda: launcher.op(*args),
        "op.out": lambda: launcher.op_out(*args, *out),
    }
    return {label: per_call_us(call, calls=CALLS) for label, call in calls.items()}


def main(names) -> None:
    stub_the_gpu()
    _library, no_op = no_op_op()
    for name in names:
        costs = layers(name, no_op)
        add = costs["torch.add(x, x)"]
        print(f"\n{name}, {TOKENS} tokens, CPU: µs per call (× torch.add)")
        for label, us in costs.items():
            print(f"  {label:<24} {us:7.2f}  {us / add:5.2f}×")


if __name__ == "__main__":
    main(sys.argv[1:] or KERNELS)
