"""Two launches of each profiled kernel at 16384 tokens, for `ncu --launch-skip` (perf notes).
Kernels: the generated modules named on the command line, or the three below."""

import importlib
import sys

import torch

from fusegen import checking

for name in sys.argv[1:] or ("rms_norm", "rms_norm_rope_fused", "rms_norm_rope_quant_fp8_only"):
    module = importlib.import_module(f"generated.{name}")
    inputs = checking.random_inputs(module, 16384, torch.Generator().manual_seed(0))
    for _ in range(2):
        module.kernel(*inputs)
    torch.cuda.synchronize()
