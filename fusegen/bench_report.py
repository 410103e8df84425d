"""`fusegen record` and `fusegen plot`, and the text and figure of `fusegen bench`: bench.json's model,
the table, the plot, and the sections of a benchmarks file. CPU only: nothing here imports torch or
tilelang, so results measured on a GPU machine can be recorded and replotted anywhere.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import Field, ValidationError

from .errors import one_line, shown
from .strict import Strict

# A time or a bandwidth: positive and finite (the tables divide by the median and the copy ceiling). The
# bounds check what `fusegen record` reads back from a bench.json; `fusegen bench` builds rows directly.
Measured = Annotated[float, Field(gt=0, allow_inf_nan=False)]


@dataclass
class Row:
    kernel: str
    tokens: Annotated[int, Field(ge=1)]
    impl: str  # fusegen | copy | eager | compile | compile_dynamic
    median_us: Measured
    p10_us: Measured
    p90_us: Measured
    ledger_bytes: Annotated[int, Field(ge=0)]
    tb_per_s: Measured
    host_us_per_call: Measured | None
    schedule: str = ""  # the program that served this count (fusegen rows)


@dataclass
class HostCost:
    """Host µs per call of one kernel at a small token count, measured in one run: kernel(...) allocating its
    outputs, kernel(..., out=...), the compiled program called directly, and torch.add(x, x): one aten op
    on the same device, the yardstick a drop-in op is held to."""

    kernel: str
    tokens: Annotated[int, Field(ge=1)]
    kernel_us: Measured
    kernel_out_us: Measured
    program_us: Measured
    add_us: Measured


class BenchResults(Strict):
    """bench.json as `fusegen bench` writes it (one written before host costs were measured has none)."""

    environment: dict[str, str | None]
    copy_tb_per_s: Measured
    rows: list[Row]
    host_costs: list[HostCost] = []


def render_table(rows: list[Row], ceiling: float) -> str:
    lines = [
        f"copy ceiling: {ceiling:.2f} TB/s (read + write)",
        "",
        "| kernel | tokens | fusegen µs | TB/s | × copy | eager µs | compile µs | compile(dynamic) µs | × compile "
        "| fusegen host µs/call | program |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    grouped: dict[tuple[str, int], dict[str, Row]] = {}
    for row in rows:
        grouped.setdefault((row.kernel, row.tokens), {})[row.impl] = row
    for (kernel, tokens), by in grouped.items():
        if "fusegen" not in by:
            continue
        f = by["fusegen"]
        us = {impl: f"{by[impl].median_us:.1f}" if impl in by else "–" for impl in ("eager", "compile", "compile_dynamic")}
        versus = f"{by['compile'].median_us / f.median_us:.2f}" if "compile" in by else "–"
        host = f"{f.host_us_per_call:.1f}" if f.host_us_per_call is not None else "–"
        lines.append(
            f"| {kernel} | {tokens} | {f.median_us:.1f} | {f.tb_per_s:.2f} | {f.tb_per_s / ceiling:.2f} | {us['eager']} | "
            f"{us['compile']} | {us['compile_dynamic']} | {versus} | {host} | {f.schedule} |"
        )
    return "\n".join(lines)


def render_host_costs(costs: list[HostCost]) -> str:
    """Host µs per call against torch.add measured in the same run, and the ratios (the add is noisy from
    run to run, so only a ratio within one run means anything)."""
    lines = [
        "host µs per call (wall clock of back-to-back calls) against `torch.add(x, x)` in the same run:",
        "",
        "| kernel | tokens | kernel() µs | kernel(out=) µs | program µs | torch.add µs | kernel() / add | kernel(out=) / add |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in costs:
        lines.append(
            f"| {c.kernel} | {c.tokens} | {c.kernel_us:.1f} | {c.kernel_out_us:.1f} | {c.program_us:.1f} | {c.add_us:.1f} "
            f"| {c.kernel_us / c.add_us:.2f} | {c.kernel_out_us / c.add_us:.2f} |"
        )
    return "\n".join(lines)


# Kernel colours come from this cycle; the ceiling's colour is kept out of it so a kernel can never be
# mistaken for the ceiling.
CEILING_COLOR = "black"
IMPL_COLORS = {"fusegen": "tab:blue", "compile": "tab:orange", "compile_dynamic": "tab:green", "eager": "tab:gray"}
IMPL_LABELS = {"fusegen": "fusegen", "compile": "torch.compile", "compile_dynamic": "torch.compile (dynamic)", "eager": "torch eager"}
BAR_KERNELS_MIN = 12  # from this many kernels, lines over tokens tangle: one bar group per kernel instead


def figure(rows: list[Row], ceiling: float, title: str):
    """The bench plot as a matplotlib Figure: grouped bars per kernel when the rows hold one token count (or
    many kernels), else × copy and µs per call against tokens, side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kernels = sorted({r.kernel for r in rows})
    tokens = sorted({r.tokens for r in rows})
    if len(tokens) == 1 or len(kernels) >= BAR_KERNELS_MIN:
        fig = _bars(plt, rows, ceiling, kernels, tokens)
    else:
        fig = _lines(plt, rows, ceiling, kernels)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def _bars(plt, rows, ceiling, kernels, tokens):
    groups = [(k, m) for k in kernels for m in tokens if any(r.kernel == k and r.tokens == m and r.impl == "fusegen" for r in rows)]
    impls = [impl for impl in IMPL_COLORS if any(r.impl == impl for r in rows)]
    by = {(r.kernel, r.tokens, r.impl): r for r in rows}
    fig, ax = plt.subplots(figsize=(10, 1.5 + 0.1 * len(groups) * len(impls) + 0.15 * len(groups)))
    height = 0.8 / len(impls)
    for i, impl in enumerate(impls):
        ys = [g - 0.4 + height * (i + 0.5) for g, key in enumerate(groups) if (*key, impl) in by]
        xs = [by[(*key, impl)].tb_per_s / ceiling for key in groups if (*key, impl) in by]
        ax.barh(ys, xs, height, color=IMPL_COLORS[impl], label=IMPL_LABELS[impl])
    ax.axvline(1.0, color=CEILING_COLOR, linestyle="--", label=f"copy ceiling ({ceiling:.2f} TB/s)")
    ax.set_yticks(range(len(groups)), [k if len(tokens) == 1 else f"{k} @ {m}" for k, m in groups], fontsize=8)
    ax.set_ylim(len(groups) - 0.5, -0.5)
    ax.set_xlabel("× copy (effective bandwidth / copy ceiling)" + (f", {tokens[0]} tokens" if len(tokens) == 1 else ""))
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(impls) + 1, fontsize=8, frameon=False)
    return fig


def _lines(plt, rows, ceiling, kernels):
    from matplotlib.ticker import FormatStrFormatter, NullFormatter

    fig, (bandwidth, time) = plt.subplots(1, 2, figsize=(14, 5.5))
    colors = plt.get_cmap("tab10" if len(kernels) <= 10 else "tab20").colors
    for index, kernel in enumerate(kernels):
        color = colors[index % len(colors)]
        for impl, style in (("fusegen", "-o"), ("compile", ":x")):
            mine = sorted((r for r in rows if r.kernel == kernel and r.impl == impl), key=lambda r: r.tokens)
            if mine:
                label = kernel if impl == "fusegen" else None
                counts = [r.tokens for r in mine]
                bandwidth.plot(counts, [r.tb_per_s / ceiling for r in mine], style, color=color, label=label, markersize=4)
                time.plot(counts, [r.median_us for r in mine], style, color=color, markersize=4)
    bandwidth.axhline(1.0, color=CEILING_COLOR, linestyle="--", label=f"copy ceiling ({ceiling:.2f} TB/s)")
    # Style keys in grey: the ceiling's colour stays the ceiling's alone.
    bandwidth.plot([], [], ":x", color="0.5", label="torch.compile (dotted, kernel's colour)")
    bandwidth.set_ylabel("× copy (effective bandwidth / copy ceiling)")
    time.set_ylabel("µs per call (median GPU time), log scale")
    time.set_yscale("log")
    # Plain numbers on the log axes: 1-2-5 steps for time, the measured counts for tokens.
    low, high = time.get_ylim()
    time.set_yticks([t for t in (0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000) if low <= t <= high])
    time.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    time.yaxis.set_minor_formatter(NullFormatter())
    for ax in (bandwidth, time):
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted({r.tokens for r in rows}))
        ax.xaxis.set_major_formatter(FormatStrFormatter("%d"))
        ax.set_xlabel("tokens (log scale)")
        ax.grid(alpha=0.3)
    time.legend(*bandwidth.get_legend_handles_labels(), loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=8, frameon=False)
    return fig


def plot(rows: list[Row], ceiling: float, path: Path, title: str) -> None:
    import matplotlib.pyplot as plt

    fig = figure(rows, ceiling, title)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def plot_title(env: dict) -> str:
    return f"fusegen on {env.get('gpu', 'an unknown GPU')} ({str(env.get('date', 'undated'))[:10]})"


def replot(results_dir: Path) -> Path:
    """Renders results_dir/bench.png again from its bench.json (no GPU), e.g. after the plot changed."""
    results = read_results(results_dir / "bench.json")
    if not results.rows:
        raise RecordError(f"{results_dir / 'bench.json'}: holds no rows to plot")
    target = results_dir / "bench.png"
    plot(results.rows, results.copy_tb_per_s, target, plot_title(results.environment))
    return target


def results_markdown(results: dict, image: str | None = None) -> str:
    """One run as text: its environment line, the plot if given, the table."""
    header = ", ".join(f"{k} {v}" for k, v in results["environment"].items())
    plot_line = [f"![fusegen against the copy ceiling and torch.compile]({image})", ""] if image else []
    table = render_table([Row(**row) for row in results["rows"]], results["copy_tb_per_s"])
    costs = [HostCost(**cost) for cost in results.get("host_costs", [])]
    host = ["", render_host_costs(costs)] if costs else []
    return "\n".join([header, "", *plot_line, table, *host]) + "\n"


class RecordError(Exception):
    """A results directory or a section of the benchmarks file that is not there."""

    def __str__(self) -> str:
        return one_line(super().__str__())  # it names files, whose names may hold line breaks or escapes


def record_begin(results_dir: str) -> str:
    return f"<!-- fusegen bench results: {results_dir} -->"


RECORD_END = "<!-- end of fusegen bench results -->"


def record(benchmarks: Path, results_dirs: list[Path]) -> None:
    """Rewrites, for each results directory, its section of `benchmarks` (between record_begin(dir) and
    RECORD_END) from the directory's bench.json, so the tables there are the bench's own output."""
    text = _read_benchmarks(benchmarks)
    for results_dir in results_dirs:
        results = read_results(results_dir / "bench.json")
        start, end = _section(text, benchmarks, results_dir)
        image = Path(os.path.relpath(results_dir / "bench.png", benchmarks.parent)).as_posix()
        text = f"{text[: start + len(record_begin(results_dir.as_posix()))]}\n{results_markdown(results.model_dump(), image)}{text[end:]}"
    benchmarks.write_text(text, encoding="utf-8")


def check_record_target(benchmarks: Path, results_dir: Path) -> None:
    """`fusegen bench --record FILE`: FILE must be readable and hold the results directory's section, which is
    said before the run, not after its minutes of timing."""
    _section(_read_benchmarks(benchmarks), benchmarks, results_dir)


def _read_benchmarks(benchmarks: Path) -> str:
    try:
        return benchmarks.read_text(encoding="utf-8")
    except OSError as exc:
        raise RecordError(f"{benchmarks}: cannot read it ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise RecordError(
            f"{benchmarks}: is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); a markdown file is"
        ) from None


def _section(text: str, benchmarks: Path, results_dir: Path) -> tuple[int, int]:
    """Where the section of `results_dir` begins and ends in `text` (the markdown file `benchmarks`)."""
    begin = record_begin(results_dir.as_posix())
    start = text.find(begin)
    end = text.find(RECORD_END, start)
    if start < 0 or end < 0:
        raise RecordError(f"{benchmarks}: no section for {results_dir.as_posix()}; put `{begin}` and `{RECORD_END}` where its table goes")
    return start, end


def read_results(path: Path) -> BenchResults:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RecordError(f"{path}: no bench results there ({exc.strerror})") from None
    try:
        return BenchResults.model_validate_json(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        if error["type"] == "json_invalid":
            raise RecordError(f"{path}: not JSON ({error['ctx']['error']}); a bench.json as `fusegen bench` writes it") from None
        key = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"]).lstrip(".")
        where = f"{key}: " if key else ""
        problem = (
            "required key is missing"
            if error["type"] == "missing"
            else (f"{error['msg'][0].lower()}{error['msg'][1:]}, got {shown(error['input'])}")
        )
        raise RecordError(f"{path}: {where}{problem}; a bench.json as `fusegen bench` writes it") from None
