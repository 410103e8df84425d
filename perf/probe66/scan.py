"""probe66 (CPU only): does the register estimate that keeps schedule.fp8_row_full_sm off a row say what ptxas
does? For a fresh draw (seed 6601) of float32 specs writing only FP8 whose planner program is a fragment
program of one row a block that its estimate holds in at most FP8_ROW_MAX_FRAGMENT_BLOCKS blocks, the 24-warp
program the rule would plan (perf/probe62's hints: 768 ÷ threads blocks, side inputs read where used),
compiled for sm_90a: the values a thread holds, the unstaged estimate against the bound's registers, and the
registers and spilled bytes ptxas gives — rows the rule takes and rows it leaves.

    .venv/bin/python perf/probe66/scan.py OUT_DIR > perf/probe66/scan.md"""

from __future__ import annotations

import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "perf" / "proto"))
from issue_estimate import compiled, sweep_program  # noqa: E402  (sibling scripts)
from probe_scripts import probe_script  # noqa: E402

from fusegen.plan import plan, staged_inputs  # noqa: E402
from fusegen.schedule import (  # noqa: E402
    FP8_ROW_MAX_FRAGMENT_BLOCKS,
    FP8_ROW_SPARE_REGISTERS,
    fragment_blocks_per_sm,
    fragment_registers,
    registers_allotted,
)
from fusegen.spec import parse_spec  # noqa: E402

probe62_scan = probe_script("probe62", "scan")
probe64 = probe_script("probe64")
SEED = 6601
COUNT = 40


def candidate(base: dict) -> tuple[dict, int, int, bool] | None:
    """The 24-warp hints, the unstaged estimate, the bound's registers and whether the rule takes the row;
    None where the planner's program is not a fragment program of few blocks."""
    route = plan(parse_spec(probe64.probe52.dump(base), "spec.toml"), "spec.toml").routes[-1]
    s = route.schedule
    ruled = any("writes only FP8 waits longest" in why for why in s.reasons)
    side_inputs = staged_inputs(route.stages)
    if not ruled and (s.variant != "fragment" or fragment_blocks_per_sm(s, side_inputs) > FP8_ROW_MAX_FRAGMENT_BLOCKS):
        return None
    hints = {"variant": "fragment", "threads": s.threads, "blocks_per_sm": s.blocks_per_sm, "prefetch": False}
    if not ruled:
        hints = probe62_scan.full_sm_hints(base)
        if hints is None:
            return None
        hints["prefetch"] = False
    need = fragment_registers(replace(s, prefetch=False), side_inputs)
    return hints, need, registers_allotted(hints["blocks_per_sm"], hints["threads"]), ruled


def _compiled(directory: str) -> tuple[str, int, int]:
    _, _, source = sweep_program(Path(directory))
    c = compiled(source)
    return Path(directory).name, c.registers, c.spilled_bytes


def main(out: Path) -> None:
    specs = out / "specs"
    specs.mkdir(parents=True, exist_ok=True)
    rows = {}
    for base in probe64.drawn(SEED, COUNT, keep=lambda base: candidate(base) is not None, prefix="held66"):
        hints, need, allotted, ruled = candidate(base)
        quant = next(op for op in base["op"] if op["kind"] == "quant_fp8")
        values = -(-base["hidden"] // hints["threads"])
        rows[base["name"]] = (hints, need, allotted, ruled, values, quant.get("group_size", "token"))
        full = dict(base, schedule=dict(base.get("schedule", {}), **hints))
        (specs / f"{base['name']}.toml").write_text(probe64.probe52.dump(full))
    built = out / "kernels"
    probe64.probe52.build(ROOT, specs.resolve(), built.resolve())
    with ProcessPoolExecutor(2) as pool:
        ptxas = {
            name: rest for name, *rest in pool.map(_compiled, [str(p) for p in sorted(built.iterdir()) if (p / "plan.json").is_file()])
        }
    print(
        "| spec | group | threads × blocks | values a thread | estimate (unstaged) / bound | taken by the rule | ptxas registers | spilled bytes |"
    )
    print("|---|---|---|---:|---|---|---:|---:|")
    for name, (hints, need, allotted, ruled, values, group) in sorted(rows.items(), key=lambda item: item[1][4]):
        registers, spilled = ptxas[name]
        print(
            f"| {name} | {group} | {hints['threads']} × {hints['blocks_per_sm']} | {values} | {need} / {allotted}"
            f"{' (spare ' + str(allotted - need) + ')' if need + FP8_ROW_SPARE_REGISTERS <= allotted else ''} | {ruled} | {registers} | {spilled} |"
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
