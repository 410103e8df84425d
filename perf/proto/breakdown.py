"""Where does the fused chain's time go? Times chains that add one op at a time (perf notes)."""

import logging
import statistics

import torch

from fusegen import checking
from fusegen.bench import time_events
from fusegen.plan import plan
from fusegen.spec import KernelSpec

logging.getLogger("tilelang").setLevel(logging.WARNING)
RMS, ROPE, QUANT = {"kind": "rmsnorm"}, {"kind": "rope", "rope_dim": 64}, {"kind": "quant_fp8"}
CHAINS = {
    "rms": [RMS],
    "rms_rope": [RMS, ROPE],
    "rms_quant (no y)": [RMS, QUANT],
    "rms_rope_quant (no y)": [RMS, ROPE, QUANT],
    "quant only": [QUANT],
    "rms_q128 (no y)": [RMS, {"kind": "quant_fp8", "group_size": 128}],
}
for label, ops in CHAINS.items():
    for threads in (128, 256):
        spec = KernelSpec.model_validate(
            {
                "name": "b",
                "dtype": "bfloat16",
                "hidden": 4096,
                "op": ops,
                "outputs": {"y": not any(o["kind"] == "quant_fp8" for o in ops)},
                "schedule": {"threads": threads},
            }
        )
        module = checking.build_variant(
            spec, __import__("pathlib").Path(f"/tmp/breakdown/{label.replace(' ', '_').replace('(', '').replace(')', '')}_{threads}")
        )
        sets = [checking.random_inputs(module, 16384, torch.Generator().manual_seed(s)) for s in range(3)]
        us = statistics.median(time_events(module.kernel, sets, 10, 100))
        moved = plan(spec, "b").ledger.fused_bytes(16384)
        print(f"{label:<24} {threads:>4} thr: {us:7.1f} us  {moved / us / 1e6:5.2f} TB/s", flush=True)
