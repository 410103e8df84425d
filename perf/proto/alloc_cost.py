"""Where kernel(...)'s allocating call spends its host time (issue 15), on the GPU host, in one run at 8
tokens: torch.add(x, x); kernel(..., out=) and kernel(...) of the generated kernels named; allocating the
outputs alone (the launcher's bound empty_strided calls) and single torch allocations; and the same
program compiled with TileLang's callee-allocated-output ABI (the outputs allocated inside the compiled host
function through TVM-FFI's torch allocator), called through its `main` entry and through TileLang's own
wrapper. Median of fusegen.bench.per_call_us rounds.

    python perf/proto/alloc_cost.py [KERNEL ...]    (default: rms_norm_rope_quant_fused rms_norm)
"""

import importlib
import sys
import traceback

import torch

from fusegen import checking
from fusegen.bench import per_call_us
from fusegen.runtime import PASS_CONFIGS, allocate

TOKENS = 8


def report(label, call):
    try:
        print(f"{label:60s} {per_call_us(call):7.2f} µs", flush=True)
    except Exception:
        print(f"{label:60s} failed: {traceback.format_exc(limit=2)}", flush=True)


x = torch.randn(TOKENS, 4096, device="cuda", dtype=torch.float16)
report("torch.add(x, x)", lambda: torch.add(x, x))
report("torch.empty((8, 4096), fp16)", lambda: torch.empty((TOKENS, 4096), dtype=torch.float16, device=x.device))
report(
    "torch.empty_strided((8, 4096), (4096, 1), fp16)",
    lambda: torch.empty_strided((TOKENS, 4096), (4096, 1), dtype=torch.float16, device=x.device),
)
report("torch.empty_like(x)", lambda: torch.empty_like(x))


def measure(name: str) -> None:
    module = importlib.import_module(f"generated.{name}")
    args = checking.random_inputs(module, TOKENS, torch.Generator().manual_seed(0))
    out = checking.poisoned_outputs(module, TOKENS)
    module.kernel(*args)
    module.kernel(*args, out=out)
    report(f"{name}: kernel(..., out=)", lambda: module.kernel(*args, out=out))
    report(f"{name}: kernel(...)", lambda: module.kernel(*args))
    report(
        f"{name}: allocating its {len(module.OUTPUTS)} outputs alone", lambda: [allocate(spec, TOKENS, x.device) for spec in module.OUTPUTS]
    )
    try:
        import tilelang

        program = module.launcher.routes[module.launcher.route_index(TOKENS)][2]
        first_output = len(module.INPUTS)
        compiled = tilelang.compile(
            program(),
            target=module.launcher.target,
            execution_backend="tvm_ffi",
            pass_configs=PASS_CONFIGS,
            out_idx=list(range(first_output, first_output + len(module.OUTPUTS))),
        )
        main = compiled.adapter.get_exportable_executable()["main"]
        anchor = args[0]
        results = main(*args, anchor)
        print(f"{name}: callee-allocated main returns {type(results).__name__} of {[type(r).__name__ for r in results]}")
        reference = module.kernel(*args)
        results = compiled(*args)
        results = results if isinstance(results, (list, tuple)) else [results]
        for got, want in zip(results, reference):
            same = torch.equal(got.view(torch.uint8), want.view(torch.uint8)) if got.dtype.itemsize == 1 else torch.equal(got, want)
            print(f"  output {tuple(got.shape)} {got.dtype} strides {got.stride()} equal to kernel(): {same}")
        report(f"{name}: callee-allocated main(*inputs, anchor)", lambda: main(*args, anchor))
        report(f"{name}: callee-allocated TileLang wrapper", lambda: compiled(*args))
    except Exception:
        print(f"{name}: callee-allocated program failed: {traceback.format_exc(limit=3)}")


for kernel_name in sys.argv[1:] or ("rms_norm_rope_quant_fused", "rms_norm"):
    measure(kernel_name)
