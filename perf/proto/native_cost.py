"""Where kernel(...)'s host time goes on the C++ launch path (sessions 11-12): each piece of a call timed
against torch.add at 8 tokens, all in turn (fusegen.bench.per_call_us_together: rounds that time every
call, medians).

    python perf/proto/native_cost.py [KERNEL ...]"""

from __future__ import annotations

import importlib
import sys

import torch
import tvm_ffi
import tvm_ffi.testing  # noqa: F401  (registers testing.nop)

from fusegen import checking, native, runtime
from fusegen.bench import per_call_us_together

TOKENS = 8


def main(names) -> None:
    library = torch.library.Library("fusegen_cost", "FRAGMENT")
    library.define("no_op(Tensor x) -> ()")
    library.impl("no_op", lambda x: None, "CUDA")
    no_op = torch.ops.fusegen_cost.no_op.default
    nop = tvm_ffi.get_global_func("testing.nop")
    for name in names:
        measure(name, no_op, nop)


def measure(name, no_op, nop) -> None:
    module = importlib.import_module(f"generated.{name}")
    args = checking.random_inputs(module, TOKENS, torch.Generator().manual_seed(0))
    out = checking.poisoned_outputs(module, TOKENS)
    tensors = (*args, *out)
    module.kernel(*args)
    module.kernel(*args, out=out)
    launcher = module.launcher
    compiled = launcher.compiled(TOKENS)
    executable = runtime.executable_of(compiled)
    program = native.register(executable, module.OUTPUTS)  # through the program's host function
    direct = native.register(executable, module.OUTPUTS, native.kernel_of(compiled))  # its kernel function
    nop_program = native.register(nop, module.OUTPUTS)
    launch = native.launch()
    armed = launcher._armed[len(args), len(tensors), TOKENS]
    x = args[0]
    calls = {
        "torch.add(x, x)": lambda: torch.add(x, x),
        "torch.empty_like(x)": lambda: torch.empty_like(x),
        "outputs allocated in Python (runtime.allocate)": lambda: [runtime.allocate(s, TOKENS, x.device) for s in module.OUTPUTS],
        "no-op op, Python impl (dispatcher floor)": lambda: no_op(x),
        "tvm_ffi testing.nop(*tensors) from Python": lambda: nop(*tensors),
        "native launch, testing.nop, into outputs": lambda: launch(nop_program, native.INTO, *tensors),
        "native launch, testing.nop (+ shared allocation)": lambda: launch(nop_program, native.SHARED, *args),
        "native launch, testing.nop (+ separate allocations)": lambda: launch(nop_program, native.SEPARATE, *args),
        "raw program from Python (tvm_ffi converts)": lambda: executable(*tensors),
        "native launch, host function, into outputs": lambda: launch(program, native.INTO, *tensors),
        "native launch, kernel function, into outputs": lambda: launch(direct, native.INTO, *tensors),
        "native launch, host function (+ shared allocation)": lambda: launch(program, native.SHARED, *args),
        "native launch, kernel function (+ shared allocation)": lambda: launch(direct, native.SHARED, *args),
        "armed guards.check": lambda: armed.guards.check(*tensors),
        "kernel(out=)": lambda: module.kernel(*args, out=out),
        "kernel()": lambda: module.kernel(*args),
    }
    us = per_call_us_together(calls, synchronize=torch.cuda.synchronize)
    print(f"\n{name}, {TOKENS} tokens, {len(args)} inputs, {len(out)} outputs (µs per call, all timed in turn)", flush=True)
    add = us["torch.add(x, x)"]
    for label, value in us.items():
        print(f"  {label:<56} {value:7.2f} µs  {value / add:5.2f}× add", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ("rms_norm_rope_quant_fused", "layer_norm_fwd"))
