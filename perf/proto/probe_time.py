"""Times every kernel package of a `fusegen build --out` directory at its sweep count (M = max(16384,
2^26 / hidden), or PROBE_TOKENS where set), in interleaved rounds (each round times every kernel once,
the order rotated, so a drift of the GPU or host moves them all alike), against the copy ceiling
measured before and after.

    python perf/proto/probe_time.py BUILD OUT.json [ROUNDS]

Each kernel: ledger bytes (plan.json) / median of its rounds' graph-timed medians; × copy beside it.
Two builds of one spec named NAME_old and NAME_new are first run on the same inputs and their outputs
compared bit for bit."""

from __future__ import annotations

import importlib
import json
import os
import statistics
import sys
from pathlib import Path

import torch

from fusegen.bench import copy_ceiling, input_sets, sweep_tokens, time_graph
from fusegen.compile import cuda_sources_of_file, in_worker_processes
from fusegen.model import Ledger, LedgerLine


def ledger_bytes(plan: dict, tokens: int) -> int:
    """The fused ledger's bytes at `tokens` (model.Ledger) from a plan.json."""
    return Ledger(tuple(LedgerLine(**line) for line in plan["ledger"]["fused"]), ()).fused_bytes(tokens)


def identical(old, new) -> str:
    """Whether two builds of one spec (a pair named _old / _new) write the same bits on the same inputs."""
    inputs = old[1][0]
    got = [o.view(torch.uint8) if o.element_size() == 1 else o for o in old[0](*inputs)]
    want = [o.view(torch.uint8) if o.element_size() == 1 else o for o in new[0](*inputs)]
    same = all(torch.equal(a, b) for a, b in zip(got, want, strict=True))
    return "outputs bit-identical" if same else "OUTPUTS DIFFER"


def pair_name(name: str) -> str:
    """The other build of a pair (NAME_old ↔ NAME_new); a name outside a pair has none."""
    for this, other in (("_old", "_new"), ("_new", "_old")):
        if name.endswith(this):
            return name.removesuffix(this) + other
    return ""


def main(build: Path, out: Path, rounds: int) -> None:
    sys.path.insert(0, str(build.parent))
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    directories = sorted(p for p in build.iterdir() if (p / "plan.json").is_file())
    # Compiled one by one below, 40 kernels took the whole of a 225-second call (session 16); compiled
    # here in worker processes, the loop loads each from TileLang's disk cache, as `fusegen bench` does.
    in_worker_processes(cuda_sources_of_file, [(d / "kernel.py",) for d in directories], os.cpu_count() or 1)
    kernels = {}
    for directory in directories:
        plan = json.loads((directory / "plan.json").read_text())
        module = importlib.import_module(f"{build.name}.{directory.name}")
        tokens = int(os.environ.get("PROBE_TOKENS") or sweep_tokens(plan["hidden"]))
        moved = ledger_bytes(plan, tokens)
        # A pair's two builds run one spec: they share one draw of inputs, which halves the host's random
        # draws (~4 s for a 16384 × 24576 row, session 63) and the GPU memory the run holds.
        partner = kernels.get(pair_name(directory.name))
        try:
            sets = partner[1] if partner and partner[2] == tokens else input_sets(module, moved, tokens, l2)
            module.kernel(*sets[0])  # compiles
            torch.cuda.synchronize()
        except Exception as exc:  # a probe variant that does not build is reported, not fatal
            print(f"{directory.name}: not timed ({type(exc).__name__}: {str(exc).splitlines()[0][:160]})", flush=True)
            continue
        kernels[directory.name] = (module.kernel, sets, tokens, moved)
        print(f"compiled {directory.name}", flush=True)
    for name in kernels:
        if name.endswith("_old") and (newer := pair_name(name)) in kernels:
            print(f"{name.removesuffix('_old')}: {identical(kernels[name], kernels[newer])}", flush=True)
    copy_before = copy_ceiling()
    samples = {name: [] for name in kernels}
    names = list(kernels)
    for round_ in range(rounds):
        for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
            fn, sets, _, _ = kernels[name]
            samples[name].append(statistics.median(time_graph(fn, sets, calls=32, replays=10)))
        print(f"round {round_ + 1} done", flush=True)
    copy_after = copy_ceiling()
    copy = (copy_before + copy_after) / 2
    rows = []
    for name in names:
        _, _, tokens, moved = kernels[name]
        us = statistics.median(samples[name])
        tb = moved / (us * 1e-6) / 1e12
        rows.append({"kernel": name, "tokens": tokens, "median_us": us, "rounds_us": samples[name], "tb_per_s": tb, "x_copy": tb / copy})
        print(f"{name:50s} {tokens:6d} {us:8.1f} us {tb:5.2f} TB/s {tb / copy:5.3f} x copy", flush=True)
    out.write_text(json.dumps({"copy_tb_per_s": [copy_before, copy_after], "gpu": torch.cuda.get_device_name(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 3)
