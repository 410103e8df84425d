"""`fusegen bench`: how close each kernel runs to the memory floor, against the copy ceiling, torch
eager and torch.compile of the same reference chain, all measured in one run on one GPU.

Time is the median over replays of a CUDA graph of back-to-back calls (after warm-up), cycling through
input sets whose total exceeds the L2 cache; for small token counts the host overhead per call
(wall clock of back-to-back calls) is reported beside it. Effective bandwidth = ledger bytes / time.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import __version__
from .errors import one_line, shown

DEFAULT_TOKENS = (1, 8, 256, 4096, 16384)
BASELINES = ("eager", "compile", "compile_dynamic")
HOST_TOKENS_MAX = 256  # up to here, host overhead per call is reported beside the GPU time
GRAPH_CALLS = 32
L2_MULTIPLE = 3  # rotate enough input sets to exceed the L2 this many times over
MAX_SETS = 64
COPY_BYTES = 1 << 30


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
    host_us_per_call: Optional[Measured]
    schedule: str = ""  # the program that served this count (fusegen rows)


class BenchResults(BaseModel):
    """bench.json as `fusegen bench` writes it."""

    model_config = ConfigDict(extra="forbid", strict=True)
    environment: dict[str, Optional[str]]
    copy_tb_per_s: Measured
    rows: list[Row]


def _percentiles(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]
    return statistics.median(ordered), pick(0.1), pick(0.9)


def time_events(fn, arg_sets, warmup: int, reps: int) -> list[float]:
    """Microseconds per call, one CUDA event pair around each call, cycling through arg_sets."""
    import torch

    for i in range(warmup):
        fn(*arg_sets[i % len(arg_sets)])
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        starts[i].record()
        fn(*arg_sets[i % len(arg_sets)])
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends)]


def time_graph(fn, arg_sets, calls: int = 64, replays: int = 30) -> list[float]:
    """Microseconds of GPU time per call from replays of a CUDA graph of `calls` back-to-back calls."""
    import torch

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for i in range(3):
            fn(*arg_sets[i % len(arg_sets)])
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(calls):
            fn(*arg_sets[i % len(arg_sets)])
    graph.replay()
    torch.cuda.synchronize()
    samples = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) * 1e3 / calls)
    return samples


def host_per_call(fn, arg_sets, calls: int = 200) -> float:
    """Wall-clock microseconds per call of back-to-back calls (what a server without graphs pays)."""
    import torch

    torch.cuda.synchronize()
    begin = time.perf_counter()
    for i in range(calls):
        fn(*arg_sets[i % len(arg_sets)])
    torch.cuda.synchronize()
    return (time.perf_counter() - begin) * 1e6 / calls


def copy_ceiling(reps: int = 30) -> float:
    """Device-to-device copy bandwidth in TB/s, counting bytes read plus bytes written."""
    import torch

    src = torch.empty(COPY_BYTES, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    samples = time_events(lambda: dst.copy_(src), [()], warmup=5, reps=reps)
    return 2 * COPY_BYTES / (statistics.median(samples) * 1e-6) / 1e12


def environment() -> dict:
    import torch

    try:
        import tilelang

        tilelang_version = tilelang.__version__
    except ImportError:
        tilelang_version = None
    try:
        driver = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True, timeout=20
        ).stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        driver = None
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "gpu": torch.cuda.get_device_name(),
        "driver": driver,
        "torch": torch.__version__,
        "triton": _version("triton"),
        "tilelang": tilelang_version,
        "fusegen": __version__,
        "commit": os.environ.get("FUSEGEN_COMMIT") or _git_commit(),
        "python": platform.python_version(),
    }


def _version(package: str):
    try:
        from importlib.metadata import version

        return version(package)
    except Exception:  # any metadata problem only means the version is unknown
        return None


def _git_commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def input_sets(module, bytes_moved: int, tokens: int, l2_bytes: int) -> list[tuple]:
    """Enough random input sets that cycling through them streams from DRAM, not from L2."""
    import torch

    from .checking import random_inputs

    sets = max(1, min(MAX_SETS, -(-L2_MULTIPLE * l2_bytes // max(bytes_moved, 1))))
    generator = torch.Generator().manual_seed(tokens)
    return [random_inputs(module, tokens, generator) for _ in range(sets)]


def bench_kernel(module, p, tokens: int, l2_bytes: int, progress, baselines) -> list[Row]:
    import torch

    from .emit import schedule_summary

    name = p.name
    bytes_moved = p.ledger.fused_bytes(tokens)
    arg_sets = input_sets(module, bytes_moved, tokens, l2_bytes)
    eager = module.reference
    makers = {
        "eager": lambda: eager,
        "compile": lambda: torch.compile(eager, dynamic=False),
        "compile_dynamic": lambda: torch.compile(eager, dynamic=True),
    }
    impls = {"fusegen": module.kernel, **{b: makers[b]() for b in baselines}}
    rows = []
    small = tokens <= HOST_TOKENS_MAX
    for impl, fn in impls.items():
        progress(f"{name} m={tokens} {impl}")
        try:
            # GPU time from graph replays at every size: timed one call at a time, a call shorter than
            # its own launch measures the host, not the kernel.
            samples = time_graph(fn, arg_sets, calls=GRAPH_CALLS)
            host = host_per_call(fn, arg_sets) if small else None
        except Exception as exc:  # a baseline that cannot run here is reported, not fatal to the run
            print(f"\n{name} m={tokens} {impl}: not timed ({type(exc).__name__}: {str(exc).splitlines()[0][:120]})")
            continue
        median, p10, p90 = _percentiles(samples)
        schedule = schedule_summary(p.route_for(tokens)) if impl == "fusegen" else ""
        rows.append(Row(name, tokens, impl, median, p10, p90, bytes_moved, bytes_moved / (median * 1e-6) / 1e12, host, schedule))
    return rows


def render_table(rows: list[Row], ceiling: float) -> str:
    lines = [
        f"copy ceiling: {ceiling:.2f} TB/s (read + write)",
        "",
        "| kernel | tokens | fusegen µs | TB/s | × copy | eager µs | compile µs | compile(dynamic) µs | × compile | fusegen host µs/call | program |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    grouped: dict[tuple[str, int], dict[str, Row]] = {}
    for row in rows:
        grouped.setdefault((row.kernel, row.tokens), {})[row.impl] = row
    for (kernel, tokens), by in grouped.items():
        if "fusegen" not in by:
            continue
        f = by["fusegen"]
        us = lambda impl: f"{by[impl].median_us:.1f}" if impl in by else "–"
        versus = f"{by['compile'].median_us / f.median_us:.2f}" if "compile" in by else "–"
        host = f"{f.host_us_per_call:.1f}" if f.host_us_per_call is not None else "–"
        lines.append(
            f"| {kernel} | {tokens} | {f.median_us:.1f} | {f.tb_per_s:.2f} | {f.tb_per_s / ceiling:.2f} | {us('eager')} | "
            f"{us('compile')} | {us('compile_dynamic')} | {versus} | {host} | {f.schedule} |"
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
    ax.set_xlabel(f"× copy (effective bandwidth / copy ceiling)" + (f", {tokens[0]} tokens" if len(tokens) == 1 else ""))
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
                bandwidth.plot([r.tokens for r in mine], [r.tb_per_s / ceiling for r in mine], style, color=color, label=label, markersize=4)
                time.plot([r.tokens for r in mine], [r.median_us for r in mine], style, color=color, markersize=4)
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


def variants(spec_dict: dict, hiddens, dtypes) -> list[dict]:
    """The spec as written, or re-targeted to each requested hidden size and dtype."""
    out = []
    for hidden in hiddens or [spec_dict["hidden"]]:
        for dtype in dtypes or [spec_dict["dtype"]]:
            data = json.loads(json.dumps(spec_dict))
            if (hidden, dtype) != (spec_dict["hidden"], spec_dict["dtype"]):
                data["name"] = f"{data['name']}_{dtype}_{hidden}"
                data["hidden"], data["dtype"] = hidden, dtype
            out.append(data)
    return out


def run(spec_paths: list[Path], tokens: tuple[int, ...], out_dir: Path, hiddens=None, dtypes=None, baselines=None, tuning_file=None):
    import torch
    from tqdm import tqdm

    from .build import collect_spec_files, load_and_plan
    from .compile import cuda_sources_of_file, in_worker_processes
    from .plan import plan as make_plan
    from .spec import KernelSpec
    from .checking import import_plan
    from .tuning import TUNING_FILE, Tuning

    env = environment()
    # The winners of the GPU this runs on, as `fusegen build --gpu` would pick them.
    tuning = Tuning.load(Path(tuning_file or TUNING_FILE), env["gpu"])
    written = load_and_plan(collect_spec_files(spec_paths))
    specs = [(KernelSpec.model_validate(v), p.spec_file) for p in written for v in variants(p.spec, hiddens, dtypes)]
    plans = [make_plan(spec, spec_file, tuning.routes(spec)) for spec, spec_file in specs]
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    ceiling = copy_ceiling()
    rows: list[Row] = []
    scratch = Path(tempfile.mkdtemp(prefix="fusegen-bench-"))
    total = len(plans) * len(tokens) * (1 + len(baselines or BASELINES))
    with tqdm(total=total, unit="timing", dynamic_ncols=True) as bar:
        def progress(label):
            bar.set_description(label[:60])
            bar.update(1)

        modules = [import_plan(p, scratch) for p in plans]
        # Compiled in parallel first: one at a time, the 28 kernels of the target matrix (and torch.compile's
        # baselines) did not finish within 150 s on the H200 machine.
        in_worker_processes(cuda_sources_of_file, [(Path(m.__file__).parent / "kernel.py",) for m in modules], os.cpu_count() or 1)
        for p, module in zip(plans, modules):
            for m in tokens:
                if p.tokens and m != p.tokens:
                    continue
                rows += bench_kernel(module, p, m, l2, progress, baselines or BASELINES)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "bench.json").write_text(json.dumps({"environment": env, "copy_tb_per_s": ceiling, "rows": [asdict(r) for r in rows]}, indent=1))
    plot(rows, ceiling, out_dir / "bench.png", plot_title(env))
    return rows, ceiling, env


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
    return "\n".join([header, "", *plot_line, table]) + "\n"


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
    try:
        text = benchmarks.read_text(encoding="utf-8")
    except OSError as exc:
        raise RecordError(f"{benchmarks}: cannot read it ({exc.strerror})") from None
    for results_dir in results_dirs:
        results = read_results(results_dir / "bench.json")
        begin = record_begin(results_dir.as_posix())
        start = text.find(begin)
        end = text.find(RECORD_END, start)
        if start < 0 or end < 0:
            raise RecordError(f"{benchmarks}: no section for {results_dir.as_posix()}; put `{begin}` and `{RECORD_END}` where its table goes")
        image = Path(os.path.relpath(results_dir / "bench.png", benchmarks.parent)).as_posix()
        text = f"{text[:start + len(begin)]}\n{results_markdown(results.model_dump(), image)}{text[end:]}"
    benchmarks.write_text(text, encoding="utf-8")


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
        problem = "required key is missing" if error["type"] == "missing" else (
            f"{error['msg'][0].lower()}{error['msg'][1:]}, got {shown(error['input'])}"
        )
        raise RecordError(f"{path}: {where}{problem}; a bench.json as `fusegen bench` writes it") from None


def main(args) -> int:
    out_dir = Path(args.out_dir)
    rows, ceiling, env = run(
        [Path(p) for p in args.paths], tuple(args.tokens), out_dir, args.hidden, args.dtype, tuple(args.baselines), args.tuning
    )
    text = results_markdown({"environment": env, "copy_tb_per_s": ceiling, "rows": [asdict(r) for r in rows]})
    print(text)
    (out_dir / "bench.md").write_text(text)
    if args.record:
        record(Path(args.record), [out_dir])
    return 0
