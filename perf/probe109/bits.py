"""probe109 on the device: each NAME_rR run against NAME_r1 (the same row code on the same threads, R rows a block:
the same bits are expected) and NAME_r1 against the planner's NAME, on the same inputs at the sweep count; where no
NAME_r1 was built (perf/probe110's draws), each NAME_rR against NAME itself.

    python perf/probe109/bits.py [KERNELS]   # default perf/probe109/kernels/time/kernels"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import torch

from fusegen.bench import sweep_tokens
from fusegen.checking import random_inputs
from fusegen.compile import import_package

HERE = Path(__file__).resolve().parent


def outputs(module, inputs) -> list[torch.Tensor]:
    got = module.kernel(*inputs)
    torch.cuda.synchronize()
    return [o.view(torch.uint8) if o.element_size() == 1 else o for o in got]


def main(kernels: Path) -> None:
    for planner in sorted(p for p in kernels.iterdir() if (p / "plan.json").is_file() and not re.search(r"_r\d$", p.name)):
        module = import_package(planner, f"_bits_{planner.name}")
        tokens = sweep_tokens(json.loads((planner / "plan.json").read_text())["hidden"])
        inputs = random_inputs(module, tokens, torch.Generator().manual_seed(tokens))
        one = base = outputs(module, inputs)
        against = "the planner's program"
        if (kernels / f"{planner.name}_r1").is_dir():
            one = outputs(import_package(kernels / f"{planner.name}_r1", f"_bits_{planner.name}_r1"), inputs)
            same = all(torch.equal(a, b) for a, b in zip(base, one, strict=True))
            print(f"{planner.name}_r1 against the planner's program: {'bit-identical' if same else 'OUTPUTS DIFFER'}", flush=True)
            against = "_r1"
        for variant in sorted(kernels.glob(f"{planner.name}_r[2-9]")):
            got = outputs(import_package(variant, f"_bits_{variant.name}"), inputs)
            same = all(torch.equal(a, b) for a, b in zip(one, got, strict=True))
            print(f"{variant.name} against {against}: {'bit-identical' if same else 'OUTPUTS DIFFER'}", flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "kernels" / "time" / "kernels")
