"""Times schedule variants of the fp8-only seed chain on the GPU (perf experiment, see NOTES.md)."""

import importlib
import logging
import statistics
from concurrent.futures import ProcessPoolExecutor

import torch

from fusegen import checking
from fusegen.bench import copy_ceiling, time_events, time_graph
from perf.proto.persistent_fp8 import launcher, program

base = importlib.import_module("generated.rms_norm_rope_quant_fp8_only.kernel")

package = importlib.import_module("generated.rms_norm_rope_quant_fp8_only")

SM = 132
VARIANTS = {
    "generated (256 thr, 1 row/block)": None,
    "staged, 256 thr, min 4 blk/SM": dict(threads=256, persistent=False, min_blocks=4),
    "staged, 256 thr, min 6 blk/SM": dict(threads=256, persistent=False, min_blocks=6),
    **{f"persistent 256 thr × {k}/SM": dict(threads=256, grid_blocks=SM * k, min_blocks=k) for k in (2, 3, 4)},
    **{f"persistent 128 thr × {k}/SM": dict(threads=128, grid_blocks=SM * k, min_blocks=k) for k in (4, 6, 8)},
    "persistent 512 thr × 2/SM": dict(threads=512, grid_blocks=SM * 2, min_blocks=2),
}


def warm(kw):
    import tilelang

    tilelang.compile(program(**kw), target=base.TARGET)
    return True


def main():
    logging.getLogger("tilelang").setLevel(logging.WARNING)
    with ProcessPoolExecutor(8) as pool:
        list(pool.map(warm, [kw for kw in VARIANTS.values() if kw]))
    ceiling = copy_ceiling()
    print(f"copy ceiling {ceiling:.2f} TB/s")
    ledger = 16384 * (4096 * 2 + 2 * 32 * 4 + 4096 + 4) + 4096 * 2
    gen = torch.Generator().manual_seed(0)
    sets = [checking.random_inputs(base, 16384, gen) for _ in range(4)]
    small = [checking.random_inputs(base, 8, gen) for _ in range(4)]
    for label, kw in VARIANTS.items():
        module_kernel = base.kernel if kw is None else launcher(**kw)
        call = module_kernel
        for tokens in (16384, 1000, 8, 1):
            inputs = checking.random_inputs(base, tokens, gen)
            outs = checking.poisoned_outputs(base, tokens)
            (base.kernel if kw is None else module_kernel)(*inputs, out=base.Outputs(*outs))
            torch.cuda.synchronize()
            checking.compare(base, outs, list(package.reference(*inputs)), "float16")
        big = statistics.median(time_events(call, sets, 10, 200))
        tiny = statistics.median(time_graph(call, small))
        print(
            f"{label:<36} 16384: {big:7.1f} us {ledger / big / 1e6:5.2f} TB/s ({ledger / big / 1e6 / ceiling:4.2f} of copy)   8 tokens (graph): {tiny:5.2f} us",
            flush=True,
        )


main()
