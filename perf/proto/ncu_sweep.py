"""Launches every kernel of a `fusegen build --out` directory once at its sweep count (M = max(16384,
2^26 / hidden)), for ncu's executed-instruction census (perf/proto/call_s13_census.sh).

    python perf/proto/ncu_sweep.py BUILD"""

import importlib
import json
import sys
from pathlib import Path

import torch

from fusegen import checking
from fusegen.bench import sweep_tokens

build = Path(sys.argv[1]).resolve()
sys.path.insert(0, str(build.parent))
for directory in sorted(p for p in build.iterdir() if (p / "plan.json").is_file()):
    plan = json.loads((directory / "plan.json").read_text())
    module = importlib.import_module(f"{build.name}.{directory.name}")
    inputs = checking.random_inputs(module, sweep_tokens(plan["hidden"]), torch.Generator().manual_seed(0))
    module.kernel(*inputs)
    torch.cuda.synchronize()
    print(f"launched {directory.name}", flush=True)
