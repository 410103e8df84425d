"""What the sweep's kernels ask of an SM, read off their code on the CPU (no GPU): for the program each
sweep spec runs at its sweep count, the SASS instructions a thread executes per row value (static: the
cubin's code size; PTX beside it, which overstated them — NOTES.md step 24), the registers
ptxas allots, the blocks and row bytes an SM can hold, and the warp instructions per ledger byte — set
against the × copy each spec measured (docs/bench/sweep/bench.json), with Spearman's rank correlation of
each, and the issue ceiling: the × copy at which the H200's schedulers, issuing one warp instruction a
cycle each, would be busy all the time. Question (issue 16): which of these
predicts the slow specs, and which of those are bound by instructions rather than by bytes in flight?

    fusegen build perf/sweep --out BUILD --tuning EMPTY.json      # an empty table: the planner's schedules
    python perf/proto/ptx_census.py BUILD [SWEEP_BENCH_JSON] > census.md"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import tilelang

from fusegen.bench import sweep_tokens
from fusegen.emit import program_sources

ROOT = Path(__file__).resolve().parents[2]
TILELANG = Path(tilelang.__file__).parent
INCLUDES = [f"-I{TILELANG / 'src'}", f"-I{TILELANG / '3rdparty' / 'cutlass' / 'include'}"]
INSTRUCTION = re.compile(r"^\s+(?:@%p\d+\s+)?[a-z][a-z0-9_.]*")  # an instruction line, inline asm included
TEXT_SECTION = re.compile(r"\.text\.\S+\s+PROGBITS\s+\S+\s+\S+\s+(\S+)")  # readelf -S -W: a kernel's code, its size
SASS_BYTES = 16  # one Hopper SASS instruction
SM_REGISTERS, SM_THREADS, SM_BLOCKS = 65536, 2048, 32
# Warp instructions the H200 can issue per second: 132 SMs × 4 schedulers × 1.98 GHz (boost clock).
ISSUE_PER_SECOND = 132 * 4 * 1.98e9


def compiled(source: str) -> tuple[int, int, int]:
    """(PTX instructions, SASS instructions, registers) of one program's CUDA. SASS counts the cubin's code:
    a kernel's .text section over 16 bytes an instruction (Hopper's encoding); this machine has no
    cuobjdump."""
    with tempfile.TemporaryDirectory() as scratch:
        cu = Path(scratch) / "k.cu"
        cu.write_text(source)
        flags = ["-arch=sm_90a", "-O3", "-std=c++17", *INCLUDES, str(cu)]
        subprocess.run(["nvcc", "-ptx", *flags, "-o", str(cu.with_suffix(".ptx"))], check=True, capture_output=True)
        ptx = cu.with_suffix(".ptx").read_text().splitlines()
        done = subprocess.run(
            ["nvcc", "-cubin", "--ptxas-options=-v", *flags, "-o", str(cu.with_suffix(".cubin"))],
            check=True,
            capture_output=True,
            text=True,
        )
        sections = subprocess.run(["readelf", "-S", "-W", str(cu.with_suffix(".cubin"))], check=True, capture_output=True, text=True).stdout
    registers = int(re.search(r"Used (\d+) registers", done.stderr).group(1))
    sass = sum(int(size, 16) for size in TEXT_SECTION.findall(sections)) // SASS_BYTES
    return sum(1 for line in ptx if INSTRUCTION.match(line)), sass, registers


def spearman(xs: list[float], ys: list[float]) -> float:
    def ranks(values):
        order = sorted(range(len(values)), key=values.__getitem__)
        rank = [0.0] * len(values)
        for position, index in enumerate(order):
            rank[index] = position
        return rank

    rx, ry = ranks(xs), ranks(ys)
    mean = (len(xs) - 1) / 2
    covariance = sum((a - mean) * (b - mean) for a, b in zip(rx, ry))
    spread = sum((a - mean) ** 2 for a in rx)
    return covariance / spread


def main(build: Path, bench: Path) -> None:
    data = json.loads(bench.read_text())
    largest: dict[str, dict] = {}  # each kernel's row at its sweep count, the largest it was timed at
    for row in data["rows"]:
        if row["impl"] == "fusegen" and row["tokens"] > largest.get(row["kernel"], {"tokens": 0})["tokens"]:
            largest[row["kernel"]] = row
    measured = {name: row["tb_per_s"] / data["copy_tb_per_s"] for name, row in largest.items()}
    rows = []
    for directory in sorted(p for p in build.iterdir() if (p / "plan.json").is_file()):
        plan = json.loads((directory / "plan.json").read_text())
        tokens = sweep_tokens(plan["hidden"])
        route = next(r for r in plan["routes"] if r["first_tokens"] <= tokens and (r["last_tokens"] or tokens) >= tokens)
        source = program_sources((directory / "kernel.cu").read_text())[plan_program(plan, plan["routes"].index(route))]
        ptx_instructions, instructions, registers = compiled(source)
        schedule = route["schedule"]
        threads, values, rows_per_block = schedule["threads"], schedule["elems_per_thread"], schedule["block_m"]
        blocks = min(SM_REGISTERS // (registers * threads), SM_THREADS // threads, SM_BLOCKS)
        row_bytes = sum(t["bytes_per_token"] for t in plan["ledger"]["fused"])
        # A block row's warp instructions over the bytes it moves.
        per_byte = instructions * (threads // 32) / rows_per_block / row_bytes
        rows.append(
            {
                "kernel": plan["name"],
                "schedule": f"{schedule['variant']} {threads}×{values}",
                "ptx_instructions_per_value": ptx_instructions / values,
                "instructions_per_value": instructions / values,
                "registers": registers,
                "blocks_per_sm": blocks,
                "row_kb_per_sm": blocks
                * rows_per_block
                * plan["hidden"]
                * {"float32": 4, "float16": 2, "bfloat16": 2}[plan["dtype"]]
                / 1024,
                "warp_instructions_per_byte": per_byte,
                "issue_ceiling": ISSUE_PER_SECOND / (per_byte * data["copy_tb_per_s"] * 1e12),
                "x_copy": measured.get(plan["name"]),
            }
        )
    judged = sorted((r for r in rows if r["x_copy"] is not None), key=lambda r: r["x_copy"])
    print(
        f"{len(judged)} sweep specs, × copy from {bench} (copy {data['copy_tb_per_s']:.2f} TB/s); SASS (static, .text size) "
        "of the program at the sweep count, PTX beside it\n"
    )
    for key in (
        "warp_instructions_per_byte",
        "instructions_per_value",
        "ptx_instructions_per_value",
        "row_kb_per_sm",
        "blocks_per_sm",
        "registers",
    ):
        print(f"- Spearman(× copy, {key}) = {spearman([r['x_copy'] for r in judged], [r[key] for r in judged]):+.2f}")
    print(
        "\n| spec | × copy | issue ceiling | × copy / ceiling | warp instr / byte | SASS instr / value | PTX instr / value | registers | blocks / SM | row KB / SM | program |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in judged:
        print(
            f"| {r['kernel']} | {r['x_copy']:.2f} | {r['issue_ceiling']:.2f} | {r['x_copy'] / r['issue_ceiling']:.2f} | "
            f"{r['warp_instructions_per_byte']:.3f} | {r['instructions_per_value']:.1f} | {r['ptx_instructions_per_value']:.1f} | "
            f"{r['registers']} | {r['blocks_per_sm']} | "
            f"{r['row_kb_per_sm']:.0f} | {r['schedule']} |"
        )


def plan_program(plan: dict, route_index: int) -> int:
    """The program of a route: plan.json's routes share programs in order of first use (Plan.program_of_route)."""
    seen: list[str] = []
    for route in plan["routes"][: route_index + 1]:
        key = json.dumps(route["schedule"], sort_keys=True)
        if key not in seen:
            seen.append(key)
    return seen.index(json.dumps(plan["routes"][route_index]["schedule"], sort_keys=True))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "docs" / "bench" / "sweep" / "bench.json")
