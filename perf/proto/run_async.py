"""Times the async-ring prototype (perf/proto/async_rows.py) against the tuned generated fp8-only kernel
in one run, checking every variant against the reference first (perf experiment, NOTES.md step 13).
Usage: python -m perf.proto.run_async OUT_DIR"""

import json
import logging
import statistics
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch

from fusegen import checking
from fusegen.bench import copy_ceiling, input_sets, time_graph, variants
from fusegen.build import collect_spec_files, load_and_plan
from fusegen.plan import plan as make_plan
from fusegen.runtime import Launcher
from fusegen.spec import KernelSpec
from fusegen.tuning import Tuning

SM = 132
SHAPES = [(4096, "float16"), (4096, "bfloat16"), (7168, "float16"), (7168, "bfloat16")]
# (threads, vec, blocks per SM (grid and launch bound), fused)
CANDIDATES = {
    4096: [
        (64, 8, 5, True),
        (64, 8, 8, True),
        (128, 8, 3, True),
        (128, 8, 4, True),
        (128, 8, 4, False),
        (128, 8, 5, True),
        (256, 8, 2, True),
        (256, 8, 3, True),
        (256, 8, 4, True),
    ],
    7168: [
        (256, 4, 2, True),
        (256, 4, 3, True),
        (256, 4, 2, False),
        (128, 8, 3, True),
        (128, 8, 4, True),
        (224, 8, 2, True),
        (224, 8, 3, True),
        (448, 8, 1, True),
        (448, 8, 2, True),
    ],
}


def keys():
    return [(n, d, *c) for n, d in SHAPES for c in CANDIDATES[n]]


def program_of(key):
    from perf.proto.async_rows import program

    n, d, threads, vec, per_sm, fused = key
    return lambda: program(n, d, threads, vec, SM * per_sm, fused, min_blocks=per_sm)


def warm(key):
    from fusegen.runtime import compile_program

    try:
        compile_program(program_of(key), {"kind": "cuda", "arch": "sm_90a"})
        return None
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[-1][:200]}"


def main(out: Path):
    logging.getLogger("tilelang").setLevel(logging.WARNING)
    out.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(16) as pool:
        failures = dict(zip(keys(), pool.map(warm, keys())))
    tuning = Tuning.load(Path("tuning.json"), torch.cuda.get_device_name())
    [written] = load_and_plan(collect_spec_files([Path("specs/rms_norm_rope_quant_fp8_only.toml")]))
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    ceiling = copy_ceiling()
    print(f"copy ceiling {ceiling:.2f} TB/s", flush=True)
    results = []
    scratch = Path(tempfile.mkdtemp())
    tokens = 16384
    for data in variants(written.spec, [4096, 7168], ["float16", "bfloat16"]):
        spec = KernelSpec.model_validate(data)
        p = make_plan(spec, "<bench>", tuning.routes(spec))
        module = checking.import_plan(p, scratch)
        k = sys.modules[module.__name__ + ".kernel"]
        ledger = p.ledger.fused_bytes(tokens)
        sets = input_sets(module, ledger, tokens, l2)
        floor = ledger / (ceiling * 1e6)
        rows = [("generated " + p.route_for(tokens).schedule.variant, module.kernel)]
        for key in keys():
            if key[:2] != (spec.hidden, spec.dtype):
                continue
            label = "async {} thr vec {} × {}/SM {}".format(*key[2:5], "fused" if key[5] else "two exchanges")
            if failures[key]:
                print(f"{spec.name} {label}: compile failed: {failures[key]}", flush=True)
                continue
            rows.append((label, Launcher(label, label, ((1, None, program_of(key)),), k.TARGET, k.INPUTS, k.OUTPUTS, k.Outputs, None)))
        for label, fn in rows:
            try:
                for m in (tokens, 2001, 133, 37, 1):
                    inputs = checking.random_inputs(module, m, torch.Generator().manual_seed(m))
                    outs = checking.poisoned_outputs(module, m)
                    fn(*inputs, out=module.Outputs(*outs))
                    torch.cuda.synchronize()
                    checking.compare(module, outs, list(module.reference(*inputs)), spec.dtype)
                correct = "ok"
            except Exception as exc:
                correct = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
            us = statistics.median(time_graph(fn, sets, calls=20))
            results.append(dict(kernel=spec.name, variant=label, us=us, of_copy=floor / us, correct=correct))
            print(f"{spec.name:<48} {label:<44} {us:7.1f} us  {floor / us:5.3f} × copy  {correct}", flush=True)
    (out / "async_rows.json").write_text(
        json.dumps({"copy_tb_per_s": ceiling, "gpu": torch.cuda.get_device_name(), "rows": results}, indent=1)
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
