"""probe62 (CPU only): where would 24 warps an SM reach, and would ptxas spill there? For every spec of the
committed sweep and of probe58's and probe59's held-out draws whose program at its sweep count is a fragment
program of one row a block, unsplit: the planner's program, and the program tune._full_sm would time on the
planner's own threads (QUICK_FULL_SM_THREADS ÷ threads blocks an SM, side inputs staged where the register
estimate fits, else read where used), each compiled for sm_90a — the registers ptxas gives, its spills, and
the warps an SM the planner's program keeps by them. The candidate rule next session holds out on the GPU
is the change this table lists (perf/probe61: 1.15–1.42× on four held-out rows).

    NVDISASM=/path/to/nvdisasm .venv/bin/python perf/probe62/scan.py OUT_DIR > perf/probe62/scan.md"""

from __future__ import annotations

import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "perf" / "proto"))
from issue_estimate import compiled, sweep_program  # noqa: E402  (sibling scripts)
from probe_scripts import probe_script  # noqa: E402

from fusegen.plan import staged_inputs  # noqa: E402
from fusegen.schedule import MAX_BLOCKS_PER_SM, WARP_THREADS, fragment_registers, registers_allotted, resident_blocks  # noqa: E402
from fusegen.tune import QUICK_FULL_SM_THREADS  # noqa: E402

probe60 = probe_script("probe60")
probe52 = probe_script("probe52")


def full_sm_hints(base: dict) -> dict | None:
    """The schedule hints of the 24-warp program on the planner's own threads, or None where it is not one."""
    from fusegen.plan import plan
    from fusegen.spec import parse_spec

    planned = plan(parse_spec(probe52.dump(base), "spec.toml"), "spec.toml")
    route = planned.routes[-1]
    s = route.schedule
    if s.variant != "fragment" or s.block_m != 1 or s.row_split != 1 or QUICK_FULL_SM_THREADS % s.threads:
        return None
    blocks = QUICK_FULL_SM_THREADS // s.threads
    if not 2 <= blocks <= MAX_BLOCKS_PER_SM or blocks == s.blocks_per_sm:
        return None
    staged = fragment_registers(s.__class__(**{**s.__dict__, "prefetch": True}), staged_inputs(route.stages))
    prefetch = bool(staged_inputs(route.stages)) and staged <= registers_allotted(blocks, s.threads)
    return {"variant": "fragment", "threads": s.threads, "blocks_per_sm": blocks, "prefetch": prefetch}


def _compiled(directory: str) -> tuple[str, int, int, int]:
    plan, schedule, source = sweep_program(Path(directory))
    c = compiled(source)
    return Path(directory).name, schedule["threads"], c.registers, c.spilled_bytes


def main(out: Path) -> None:
    specs = out / "specs"
    specs.mkdir(parents=True, exist_ok=True)
    for base in probe60.bases():
        if base["name"].startswith(("deepseek", "gemma", "llama", "qwen")):
            continue
        hints = full_sm_hints(base)
        if hints is None:
            continue
        (specs / f"{base['name']}_planner.toml").write_text(probe52.dump(dict(base, name=f"{base['name']}_planner")))
        full = dict(base, name=f"{base['name']}_full", schedule=dict(base.get("schedule", {}), **hints))
        (specs / f"{base['name']}_full.toml").write_text(probe52.dump(full))
    built = out / "kernels"
    probe52.build(ROOT, specs.resolve(), built.resolve())
    with ProcessPoolExecutor(2) as pool:
        rows = {name: rest for name, *rest in pool.map(_compiled, [str(p) for p in sorted(built.iterdir()) if (p / "plan.json").is_file()])}
    print("| spec | planner: threads, registers, spill, warps an SM | 24 warps: blocks, staged, registers, spill |")
    print("|---|---|---|")
    for name in sorted(n.removesuffix("_planner") for n in rows if n.endswith("_planner")):
        threads, registers, spill = rows[f"{name}_planner"]
        _, full_registers, full_spill = rows[f"{name}_full"]
        full_plan = json.loads((built / f"{name}_full" / "plan.json").read_text())["routes"][-1]["schedule"]
        warps = resident_blocks(registers, threads) * threads // WARP_THREADS
        print(
            f"| {name} | {threads}, {registers}, {spill}, {warps} | {full_plan['blocks_per_sm']}, {full_plan['prefetch']}, "
            f"{full_registers}, {full_spill} |"
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
