"""Two launches of each named kernel of a generated directory at TOKENS (default 16384), for ncu.

python perf/proto/ncu_rows.py PACKAGE NAME [NAME ...]     (PACKAGE: a `fusegen build --out` directory)
"""

import importlib
import os
import sys

import torch

from fusegen import checking

package, names = sys.argv[1], sys.argv[2:]
tokens = int(os.environ.get("TOKENS", "16384"))
sys.path.insert(0, os.path.dirname(os.path.abspath(package)))
for name in names:
    module = importlib.import_module(f"{os.path.basename(os.path.abspath(package))}.{name}")
    inputs = checking.random_inputs(module, tokens, torch.Generator().manual_seed(0))
    for _ in range(2):
        module.kernel(*inputs)
    torch.cuda.synchronize()
