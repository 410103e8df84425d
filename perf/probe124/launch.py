"""Launches fusegen's kernel and torch.compile's (static shapes, the baseline `fusegen bench` times) of each
spec built under BUILD, LAUNCHES times each at TOKENS, for ncu to profile the last launches of both
(perf/probe124/call.sh).

    python perf/probe124/launch.py BUILD [TOKENS] [LAUNCHES]"""

import importlib
import sys
from pathlib import Path

import torch

from fusegen import checking


def main(build: Path, tokens: int, launches: int) -> None:
    sys.path.insert(0, str(build.parent))
    for directory in sorted(p for p in build.iterdir() if (p / "plan.json").is_file()):
        module = importlib.import_module(f"{build.name}.{directory.name}")
        inputs = checking.random_inputs(module, tokens, torch.Generator().manual_seed(tokens))
        compiled = torch.compile(module.reference, dynamic=False)
        for name, fn in (("fusegen", module.kernel), ("compile", compiled)):
            for _ in range(launches):
                fn(*inputs)
            torch.cuda.synchronize()
            print(f"launched {directory.name} {name} {launches}× at {tokens} tokens", flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve(), int(sys.argv[2]) if len(sys.argv) > 2 else 256, int(sys.argv[3]) if len(sys.argv) > 3 else 3)
