"""Issue 16's sweep report from saved `fusegen bench` runs (any machine): per spec of perf/sweep, × copy at
its sweep count M = max(16384, 2^26 / hidden) with the planner's own schedule and, where a tuned run is
given, with `fusegen tune` winners; × torch.compile at 8 and 256 tokens; the targets met or not; and a
plot of × copy against hidden, default against tuned.

    python scripts/sweep_report.py SPEC_DIR WIDE_RUN [--small SMALL_RUN] [--tuned TUNED_RUN ...] --out DIR

Each RUN is a `fusegen bench --out-dir` directory (bench.json): WIDE_RUN holds the untuned sweep counts,
SMALL_RUN the 8- and 256-token rows with torch.compile (default: WIDE_RUN), each TUNED_RUN the sweep counts
of some specs with tuning winners, against that run's own copy ceiling (a later run's row replaces an
earlier's). Writes DIR/sweep.md and DIR/sweep.png; exits 1 if a target is missed (the report says which).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tomllib
from pathlib import Path

from fusegen.bench import sweep_tokens
from fusegen.bench_report import read_results

EVERY_SPEC = 0.90
MEDIAN = 0.93
TUNED_EVERY_SPEC = 0.93
SMALL_TOKENS = (8, 256)


def by_kernel(run: Path) -> tuple[dict, float]:
    """{(kernel, tokens, impl): row} of a saved run, and its copy ceiling."""
    results = read_results(run / "bench.json")
    return {(r.kernel, r.tokens, r.impl): r for r in results.rows}, results.copy_tb_per_s


def chain_of(spec: dict) -> str:
    return " → ".join(op["kind"] for op in spec["op"]) + ("" if spec.get("outputs", {}).get("y", True) else ", no Y")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spec_dir", type=Path)
    parser.add_argument("default_run", type=Path)
    parser.add_argument("--small", type=Path)
    parser.add_argument("--tuned", type=Path, action="append", default=[])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    specs = {s["name"]: s for s in (tomllib.loads(p.read_text()) for p in sorted(args.spec_dir.glob("*.toml")))}
    default, default_copy = by_kernel(args.default_run)
    small = by_kernel(args.small)[0] if args.small else default
    tuned, tuned_copies = {}, []  # {(kernel, tokens): × its run's copy}
    for run in args.tuned:
        rows, copy = by_kernel(run)
        tuned |= {(kernel, tokens): row.tb_per_s / copy for (kernel, tokens, impl), row in rows.items() if impl == "fusegen"}
        tuned_copies.append(f"{copy:.2f}")

    lines = [
        f"Issue 16 sweep: {len(specs)} specs of `{args.spec_dir}`, untuned (planner rules) and tuned, × copy at "
        f"M = max(16384, 2^26 / hidden) tokens; copy ceiling {default_copy:.2f} TB/s"
        + (f" (tuned runs: {', '.join(tuned_copies)})" if tuned_copies else ""),
        "",
        "| spec | chain | dtype | hidden | M | × copy | tuned × copy | × compile at 8 | × compile at 256 | program |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    points, missing, slow_small, compared_small = [], [], [], 0
    for name, spec in sorted(specs.items(), key=lambda item: (item[1]["hidden"], item[0])):
        m = sweep_tokens(spec["hidden"])
        row = default.get((name, m, "fusegen"))
        if row is None:
            missing.append(name)
            continue
        ratio = row.tb_per_s / default_copy
        tuned_ratio = tuned.get((name, m))
        versus = []
        for tokens in SMALL_TOKENS:
            ours, theirs = small.get((name, tokens, "fusegen")), small.get((name, tokens, "compile"))
            versus.append(theirs.median_us / ours.median_us if ours and theirs else None)
            compared_small += versus[-1] is not None
            if versus[-1] is not None and versus[-1] < 1:
                # A pair whose p10–p90 ranges overlap may turn over in the next run (torch.compile's own time
                # moved 6 % between two calls of one day, perf/probe100): said beside it; the target stays unmet.
                tie = theirs.p90_us >= ours.p10_us
                slow_small.append(f"{name} at {tokens} ({versus[-1]:.3f}{', p10–p90 overlapping' if tie else ''})")
        points.append((spec["hidden"], ratio, tuned_ratio, name))
        shown = [f"{v:.2f}" if v is not None else "–" for v in (tuned_ratio, *versus)]
        lines.append(
            f"| {name} | {chain_of(spec)} | {spec['dtype']} | {spec['hidden']} | {m} | {ratio:.2f} | {' | '.join(shown)} | {row.schedule} |"
        )
    ratios = [p[1] for p in points]
    verdicts = [
        f"- every spec ≥ {EVERY_SPEC} × copy: {'met' if ratios and min(ratios) >= EVERY_SPEC else 'NOT met'}"
        + (f" (lowest {min(ratios):.2f})" if ratios else ""),
        f"- median ≥ {MEDIAN}: {'met' if ratios and statistics.median(ratios) >= MEDIAN else 'NOT met'}"
        + (f" ({statistics.median(ratios):.3f})" if ratios else ""),
        "- ≤ 256 tokens no slower than torch.compile: "
        + (
            "not measured (no torch.compile rows at 8 or 256 tokens)"
            if not compared_small
            else "NOT met: " + ", ".join(slow_small)
            if slow_small
            else "met"
        ),
    ]
    short = []
    if args.tuned:
        # `fusegen tune` times the planner's own schedule among its candidates, so a spec left out of the
        # tuned run (it met the target untuned) counts at its untuned speed; a tuned one at the better of both.
        short = sorted(
            (best, name) for _, ratio, tuned_ratio, name in points if (best := max(ratio, tuned_ratio or 0.0)) < TUNED_EVERY_SPEC
        )
        verdicts.append(
            f"- with `fusegen tune`, every spec ≥ {TUNED_EVERY_SPEC} × copy ({sum(p[2] is not None for p in points)} tuned, "
            "the rest at their untuned speed): "
            + ("met" if not short else "NOT met: " + ", ".join(f"{name} {value:.2f}" for value, name in short))
        )
    if missing:
        verdicts.append(f"- not measured (run cut short?): {', '.join(missing)}")
    lines[2:2] = ["Targets (issue 16):", *verdicts, ""]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sweep.md").write_text("\n".join(lines) + "\n")
    _plot(points, args.out / "sweep.png")
    print("\n".join(verdicts))
    return (
        0
        if ratios
        and compared_small
        and not missing
        and not slow_small
        and not short
        and min(ratios) >= EVERY_SPEC
        and statistics.median(ratios) >= MEDIAN
        else 1
    )


def _plot(points, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5))
    ax.scatter([p[0] for p in points], [p[1] for p in points], label="planner rules (untuned)", marker="o")
    tuned = [(p[0], p[2]) for p in points if p[2] is not None]
    if tuned:
        ax.scatter([t[0] for t in tuned], [t[1] for t in tuned], label="fusegen tune winners", marker="x")
    for level, style in ((EVERY_SPEC, "--"), (MEDIAN, ":")):
        ax.axhline(level, linestyle=style, color="grey", linewidth=1)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("hidden (columns)")
    ax.set_ylabel("× copy ceiling at M = max(16384, 2^26 / hidden)")
    ax.set_title("fusegen sweep: every spec against the copy ceiling")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
