"""Is the HF example's layer captured in CUDA graphs with and without fusegen, and what does one layer call
cost then? Session 11: the example's small-token timings flipped order between runs (host-bound), so this
counts torch.compile's CUDA-graph partitions and skips beside a timing at 8 tokens.

    python perf/proto/graph_diag.py        (a Hopper GPU, transformers 5.x)"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch._dynamo.utils import counters

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import hf_llama_decoder as example  # noqa: E402  (an example script, importable by path)

TOKENS = 8


def graphed_ms(model, hidden, arguments) -> tuple[float, dict]:
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(model, fullgraph=True, dynamic=True, mode="reduce-overhead")
    for _ in range(5):  # CUDA graphs record on a later call than the first
        compiled(hidden, **arguments)
    return example.ms_per_call(lambda: compiled(hidden, **arguments)), dict(counters["inductor"])


def main() -> None:
    layer, rotary, fused = example.build()
    hidden, arguments = example.layer_inputs(rotary, TOKENS)
    with torch.no_grad():
        for label, model in (("unpatched", example.unpatched(layer)), ("fused", fused)):
            ms, inductor = graphed_ms(model, hidden, arguments)
            print(label, "ms", ms, inductor, flush=True)


if __name__ == "__main__":
    main()
