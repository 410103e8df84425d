"""probe126's timing: each package under BUILD (perf/probe126/build.py) and torch.compile of each spec's reference,
at TOKENS, as `fusegen bench` times them — a CUDA graph of back-to-back calls cycling input sets that exceed the L2,
the graphs replayed in turn over rounds — and again on one input set (its rows then stay in the L2, as a kernel's
input does that the previous kernel just wrote). Then one replay of each graph under torch.profiler: the kernels'
own durations and the gaps between one kernel's end and the next one's start, which bench's per-call time adds.

    python perf/probe126/replays.py BUILD [TOKENS] > OUT.txt"""

from __future__ import annotations

import importlib
import json
import statistics
import sys
import tempfile
from pathlib import Path

import torch

from fusegen.bench import GRAPH_CALLS, GRAPH_ROUNDS, captured_graph, input_sets, time_graphs_together
from fusegen.model import Ledger, LedgerLine


def ledger_bytes(directory: Path, tokens: int) -> int:
    plan = json.loads((directory / "plan.json").read_text())
    return Ledger(tuple(LedgerLine(**line) for line in plan["ledger"]["fused"]), ()).fused_bytes(tokens)


def kernel_spans(graph) -> list[tuple[float, float]]:
    """(start, duration) in µs of each kernel one replay of `graph` ran, in order, from torch.profiler's trace."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        graph.replay()
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as trace:
        prof.export_chrome_trace(trace.name)
        events = json.loads(Path(trace.name).read_text())["traceEvents"]
    kernels = sorted((e["ts"], e["dur"]) for e in events if e.get("cat") == "kernel" and e.get("ph") == "X")
    return kernels


def spans_summary(spans: list[tuple[float, float]]) -> str:
    if len(spans) < 2:
        return f"{len(spans)} kernel event(s): nothing to measure"
    durations = [d for _, d in spans]
    gaps = [b[0] - (a[0] + a[1]) for a, b in zip(spans, spans[1:])]
    return f"{len(spans)} kernels: duration median {statistics.median(durations):.2f} µs, gap median {statistics.median(gaps):.2f} µs"


def main(build: Path, tokens: int) -> None:
    sys.path.insert(0, str(build.parent))
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    print(f"{torch.cuda.get_device_name(0)}, {tokens} tokens, {GRAPH_CALLS} calls a graph, {GRAPH_ROUNDS} rounds")
    families: dict[str, list[Path]] = {}
    for directory in sorted(p for p in build.iterdir() if (p / "plan.json").is_file()):
        families.setdefault(directory.name.rsplit("_", 1)[0], []).append(directory)
    for family, directories in families.items():
        # Each family's input sets outlive its graphs (bench.captured_graph says why).
        graphs, spans, kept_sets = {}, {}, []
        for directory in directories:
            module = importlib.import_module(f"{build.name}.{directory.name}")
            sets = input_sets(module, ledger_bytes(directory, tokens), tokens, l2)
            kept_sets.append(sets)
            impls = {directory.name.rsplit("_", 1)[1]: module.kernel}
            if directory.name.endswith("_planner"):
                impls["compile"] = torch.compile(module.reference, dynamic=False)
            for impl, fn in impls.items():
                for where, arg_sets in (("DRAM", sets), ("L2", sets[:1])):
                    graphs[f"{impl} {where}"] = captured_graph(fn, arg_sets, GRAPH_CALLS)
        samples = time_graphs_together(graphs, GRAPH_CALLS, GRAPH_ROUNDS)
        print(f"\n{family}")
        for name, graph in graphs.items():
            spans[name] = spans_summary(kernel_spans(graph))
        for name, values in samples.items():
            print(f"  {name:16s} {statistics.median(values):7.3f} µs a call (p10 {sorted(values)[len(values) // 10]:.3f}); {spans[name]}")


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve(), int(sys.argv[2]) if len(sys.argv) > 2 else 256)
