"""On the H200: a generated kernel as a drop-in torch op (issue 15). For two example kernels: opcheck of
both ops; torch.compile(fullgraph=True, dynamic=True) against eager at changing token counts, plain and
under CUDA graphs (mode="reduce-overhead"); host µs per call at 8 tokens of torch.add, the raw compiled
program (the executable the launcher calls), kernel(...) allocating, kernel(..., out=...) and the op
called directly, in one run (fusegen.bench.per_call_us: median of 7 rounds of 2000 calls after warm-up).

    python scripts/gpu_dropin.py RESULT.json

Each part records its error text and the run goes on; the JSON holds every result."""

from __future__ import annotations

import importlib
import json
import sys
import traceback

import torch

from fusegen import checking
from fusegen.bench import host_cost as bench_host_cost
from fusegen.bench import per_call_us

KERNELS = ("rms_norm_rope_quant_fused", "layer_norm_fwd")
TOKEN_COUNTS = (1, 7, 64, 300)
HOST_TOKENS = 8


def recorded(results: dict, key: str, part):
    try:
        results[key] = part()
    except Exception:  # any failure of one part is a finding to record, not a reason to stop
        results[key] = {"error": traceback.format_exc(limit=4)}
    print(f"{key}: {json.dumps(results[key])[:400]}", flush=True)


def inputs(module, tokens, seed=0):
    return checking.random_inputs(module, tokens, torch.Generator().manual_seed(seed))


def opcheck(op, args):
    return {k: str(v) for k, v in torch.library.opcheck(op, tuple(args)).items()}


def opcheck_out(module):
    """opcheck of the out variant. Its test_schema compares each mutated argument before and after with
    arithmetic that torch does not implement for fp8 tensors ("mul_cuda" not implemented for
    Float8_e4m3fn, seen on the H200), so a kernel writing fp8 runs the other three tests and says why."""
    args = [*inputs(module, 16), *checking.poisoned_outputs(module, 16)]
    writes_fp8 = any(spec.dtype.itemsize == 1 and spec.dtype.is_floating_point for spec in module.OUTPUTS)
    tests = ("test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic") if writes_fp8 else None
    results = {
        k: str(v)
        for k, v in torch.library.opcheck(
            module.launcher.op_out, tuple(args), test_utils=tests or torch.library._OPCHECK_DEFAULT_UTILS
        ).items()
    }
    if writes_fp8:
        results["test_schema"] = "not run: torch cannot compare fp8 tensors in it"
    return results


def compiled_runs(module, mode):
    torch._dynamo.reset()

    def model(*args):
        outputs = module.kernel(*args)
        return [t.float() * 2 for t in outputs]

    compiled = torch.compile(model, fullgraph=True, dynamic=True, mode=mode)
    rows = {}
    for tokens in TOKEN_COUNTS:
        args = inputs(module, tokens, seed=tokens)
        for _ in range(3):  # CUDA graphs record on a later call than the first
            got = compiled(*args)
        torch.cuda.synchronize()
        eager = model(*args)
        reference = [t.float() * 2 for t in module.reference(*args)]
        rows[tokens] = {
            "equal_to_eager": all(torch.equal(g, e) for g, e in zip(got, eager)),
            "max_abs_vs_reference": [float((g - r).abs().max()) for g, r in zip(got, reference)],
        }
    rows["recompiles"] = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    return rows


def host_cost(module):
    """fusegen bench's host costs, and the two ops called directly (the dispatcher path kernel() leaves
    for the first call of each signature and for traced calls)."""
    costs = bench_host_cost(module, HOST_TOKENS)
    args = inputs(module, HOST_TOKENS)
    out = checking.poisoned_outputs(module, HOST_TOKENS)
    us = {
        "torch.add": costs.add_us,
        "raw program": costs.program_us,
        "kernel()": costs.kernel_us,
        "kernel(out=)": costs.kernel_out_us,
        "op": per_call_us(lambda: module.launcher.op(*args), synchronize=torch.cuda.synchronize),
        "op.out": per_call_us(lambda: module.launcher.op_out(*args, *out), synchronize=torch.cuda.synchronize),
    }
    return {name: {"us": round(value, 2), "x_torch_add": round(value / costs.add_us, 2)} for name, value in us.items()}


def main(path: str) -> None:
    results = {"torch": torch.__version__, "device": torch.cuda.get_device_name()}
    for name in KERNELS:
        module = importlib.import_module(f"generated.{name}")
        part = results[name] = {}
        # Each part runs at once, inside this iteration: binding `module` as a default says so.
        recorded(part, "opcheck", lambda module=module: opcheck(module.launcher.op, inputs(module, 16)))
        recorded(part, "opcheck out variant", lambda module=module: opcheck_out(module))
        recorded(part, "fullgraph", lambda module=module: compiled_runs(module, None))
        recorded(part, "fullgraph reduce-overhead", lambda module=module: compiled_runs(module, "reduce-overhead"))
        recorded(part, "host us per call", lambda module=module: host_cost(module))
        if "error" not in part["host us per call"]:
            print(f"\n{name}, {HOST_TOKENS} tokens: µs per call (× torch.add)")
            for call, row in part["host us per call"].items():
                print(f"  {call:<14} {row['us']:>8.2f}  {row['x_torch_add']:>5.2f}×")
    with open(path, "w") as handle:
        json.dump(results, handle, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
