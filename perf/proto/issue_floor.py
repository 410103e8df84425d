"""Each sweep spec's issue floor from ncu's executed-instruction census (perf/proto/call_s13_census.sh):
the × copy its kernel would reach if the H200's 132 × 4 schedulers issued one of its warp instructions on
every cycle at the clock ncu saw — a ceiling no schedule of that code can pass — beside the × copy the
sweep measured, ncu's issue-slot use and achieved occupancy. A kernel whose measured × copy is near its
issue ceiling is bound by its instructions (fewer of them is the only way up); one far below it is bound by
latency (bytes in flight). Question (issue 16): which of the specs under 0.90 is which?

    python perf/proto/issue_floor.py BUILD CENSUS_CSV SWEEP_BENCH_JSON > floor.md   (BUILD: perf/sweep built untuned)"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_time import ledger_bytes  # noqa: E402  (a sibling script)

from fusegen.bench import sweep_tokens  # noqa: E402

SCHEDULERS = 132 * 4


# ncu's units (as its CSV writes them) to seconds and cycles per second; counts and percentages stay.
SCALE = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9}


def census(path: Path) -> dict[str, dict[str, float]]:
    rows = [r for r in csv.reader(path.read_text().splitlines()) if len(r) > 10]
    header = rows[0]
    name, metric, unit, value = (header.index(k) for k in ("Kernel Name", "Metric Name", "Metric Unit", "Metric Value"))
    found: dict[str, dict[str, float]] = {}
    for r in rows[1:]:
        kernel = r[name].removesuffix("_kernel")
        found.setdefault(kernel, {})[r[metric]] = float(r[value].replace(",", "")) * SCALE.get(r[unit], 1.0)
    return found


def main(build: Path, census_csv: Path, bench_json: Path) -> None:
    bench = json.loads(bench_json.read_text())
    copy = bench["copy_tb_per_s"] * 1e12
    measured = {}
    for row in bench["rows"]:
        if row["impl"] == "fusegen" and row["tokens"] > measured.get(row["kernel"], (0, 0))[0]:
            measured[row["kernel"]] = (row["tokens"], row["tb_per_s"] * 1e12 / copy)
    counts = census(census_csv)
    table = []
    for directory in sorted(p for p in build.iterdir() if (p / "plan.json").is_file()):
        plan = json.loads((directory / "plan.json").read_text())
        m = counts.get(plan["name"])
        if m is None:
            continue
        tokens = sweep_tokens(plan["hidden"])
        moved = ledger_bytes(plan, tokens)
        issue_s = m["smsp__inst_executed.sum"] / SCHEDULERS / m["sm__cycles_elapsed.avg.per_second"]
        ceiling = (moved / copy) / issue_s
        x_copy = measured.get(plan["name"], (0, None))[1]
        table.append((x_copy, plan["name"], m, tokens, ceiling))
    table.sort(key=lambda r: (r[0] is None, r[0]))
    print(
        f"{len(table)} sweep kernels, untuned, at their sweep counts; ncu --clock-control none; × copy from {bench_json} "
        f"(copy {copy / 1e12:.2f} TB/s)\n"
    )
    print(
        "| spec | × copy | issue ceiling (× copy) | × copy / ceiling | warp instructions / row | issue slots busy | occupancy | registers | ncu µs | SM GHz |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for x_copy, name, m, tokens, ceiling in table:
        shown = f"{x_copy:.2f}" if x_copy is not None else "–"
        ratio = f"{x_copy / ceiling:.2f}" if x_copy is not None else "–"
        print(
            f"| {name} | {shown} | {ceiling:.2f} | {ratio} | {m['smsp__inst_executed.sum'] / tokens:.0f} | "
            f"{m['smsp__issue_active.avg.pct_of_peak_sustained_active']:.0f} % | {m['sm__warps_active.avg.pct_of_peak_sustained_active']:.0f} % | "
            f"{m['launch__registers_per_thread']:.0f} | {m['gpu__time_duration.sum'] * 1e6:.1f} | {m['sm__cycles_elapsed.avg.per_second'] / 1e9:.2f} |"
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
