"""`fusegen bench`: how close each kernel runs to the memory floor, against the copy ceiling, torch
eager and torch.compile of the same reference chain, all measured in one run on one GPU.

Time is the median over replays of a CUDA graph of back-to-back calls (after warm-up), cycling through
input sets whose total exceeds the L2 cache; for small token counts the host overhead per call
(wall clock of back-to-back calls) is reported beside it, and for each kernel at 8 tokens the host cost
of its calls against one aten op (host_cost). Effective bandwidth = ledger bytes / time.
The timing is here (it needs the GPU); the table, the plot and `fusegen record` are in bench_report.
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
from dataclasses import asdict
from pathlib import Path

from . import __version__
from .bench_report import HostCost, Row, plot, plot_title, record, results_markdown

BASELINES = ("eager", "compile", "compile_dynamic")
HOST_TOKENS_MAX = 256  # up to here, host overhead per call is reported beside the GPU time
HOST_COST_TOKENS = 8  # where a call's host cost against one aten op is measured: the GPU work is least there
GRAPH_CALLS = 32
GRAPH_ROUNDS = 30  # replays of each graph, one a round
L2_MULTIPLE = 3  # rotate enough input sets to exceed the L2 this many times over
MAX_SETS = 64
COPY_BYTES = 1 << 30
# Issue 16's sweep judges every width at M = max(SWEEP_MIN_TOKENS, SWEEP_ELEMENTS / hidden) tokens, so a
# narrow row still moves enough bytes (256 MB read and written at 2 bytes an element) for launch and
# tail effects not to count against it.
SWEEP_MIN_TOKENS = 16384
SWEEP_ELEMENTS = 1 << 26


def _percentiles(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)
    p10, p90 = (ordered[min(len(ordered) - 1, int(q * len(ordered)))] for q in (0.1, 0.9))
    return statistics.median(ordered), p10, p90


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


def captured_graph(fn, arg_sets, calls: int):
    """A CUDA graph of `calls` back-to-back calls of `fn`, cycling through `arg_sets`, replayed once: its
    first calls run on a side stream before the capture (what compiles or allocates on first use). The graph
    holds raw pointers to `arg_sets`' tensors and every capture empties torch's cache, so the caller keeps
    them alive for as long as it replays the graph."""
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
    return graph


def replay_us(graph, calls: int) -> float:
    """Microseconds of GPU time per call of one replay of a graph of `calls` calls."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / calls


def time_graph(fn, arg_sets, calls: int = 64, replays: int = GRAPH_ROUNDS) -> list[float]:
    """Microseconds of GPU time per call from replays of a CUDA graph of `calls` back-to-back calls."""
    graph = captured_graph(fn, arg_sets, calls)
    return [replay_us(graph, calls) for _ in range(replays)]


def time_graphs_together(graphs: dict, calls: int, rounds: int) -> dict[str, list[float]]:
    """replay_us of several captured graphs measured in turn: each round replays every graph once, the order
    rotated by one per round, so that a drift of the GPU within a run (its clocks, the L2 a previous kernel
    left) moves every graph of a round alike and their ratios hold; `rounds` samples each."""
    names = list(graphs)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(rounds if names else 0):  # none captured: nothing to time
        for name in _rotated(names, round_):
            samples[name].append(replay_us(graphs[name], calls))
    return samples


def _rotated(names: list, round_: int) -> list:
    """`names` begun at the round's place: each name leads once every len(names) rounds."""
    turn = round_ % len(names)
    return names[turn:] + names[:turn]


def per_call_us(call, calls: int = 2000, rounds: int = 7, warmup: int = 200, synchronize=lambda: None) -> float:
    """Host microseconds per call: the median over `rounds` of the wall clock of `calls` back-to-back calls,
    after `warmup` calls. `synchronize` (torch.cuda.synchronize on a GPU) empties the queue before each
    round and stays outside the clock, so a round measures what issuing the calls costs the host."""
    return per_call_us_together({"call": call}, calls, rounds, warmup, synchronize)["call"]


def per_call_us_together(calls: dict, per_round: int = 2000, rounds: int = 15, warmup: int = 200, synchronize=lambda: None) -> dict:
    """per_call_us of several calls measured in turn: each round times every call (`per_round` back-to-back
    calls each, the order rotated by one per round so that none always follows the same one), and each
    call's figure is its median over the rounds. A host whose speed drifts (the H200 host's torch.add
    ranged 6.4-9.7 µs within one run) then slows every call of a round alike, so their ratios hold."""
    for call in calls.values():
        for _ in range(warmup):
            call()
    names = list(calls)
    samples: dict = {name: [] for name in names}
    for round_ in range(rounds):
        for name in _rotated(names, round_):
            call = calls[name]
            synchronize()
            start = time.perf_counter()
            for _ in range(per_round):
                call()
            samples[name].append((time.perf_counter() - start) / per_round * 1e6)
    synchronize()
    return {name: statistics.median(values) for name, values in samples.items()}


def host_per_call(fn, arg_sets) -> float:
    """Host microseconds per call of `fn` on the first input set (what a server without graphs pays)."""
    import torch

    args = arg_sets[0]
    return per_call_us(lambda: fn(*args), calls=200, rounds=3, warmup=20, synchronize=torch.cuda.synchronize)


def host_cost(module, tokens: int) -> HostCost:
    """Host µs per call at `tokens` of kernel(...) allocating its outputs, kernel(..., out=...), the compiled
    program called from Python through tvm_ffi (TileLang's own way in), and torch.add(x, x) on the same
    device, measured in turn (per_call_us_together)."""
    import torch

    from .checking import poisoned_outputs, random_inputs
    from .runtime import executable_of

    args = random_inputs(module, tokens, torch.Generator().manual_seed(tokens))
    out = poisoned_outputs(module, tokens)
    x = args[0]
    program = executable_of(module.launcher.compiled(tokens))
    calls = {
        "kernel_us": lambda: module.kernel(*args),
        "kernel_out_us": lambda: module.kernel(*args, out=out),
        "program_us": lambda: program(*args, *out),
        "add_us": lambda: torch.add(x, x),
    }
    return HostCost(module.launcher.name, tokens, **per_call_us_together(calls, synchronize=torch.cuda.synchronize))


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
        driver = (
            subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True, timeout=20
            )
            .stdout.strip()
            .splitlines()[0]
        )
    except (OSError, subprocess.SubprocessError, IndexError):
        driver = None
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
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
    first = random_inputs(module, tokens, torch.Generator().manual_seed(tokens))
    per_token = ["m" in spec.shape for spec in module.INPUTS]
    # Each set holds its own copy of the per-token inputs (its rows rolled), so that cycling through them
    # streams from DRAM. The others (weights, a cos_sin_cache) are one per model in a server, and are
    # shared: drawing a 134 MB cache for each of 64 sets took ~9 s per timing.
    return [first] + [[t.roll(k, 0) if rows else t for t, rows in zip(first, per_token)] for k in range(1, sets)]


def bench_kernel(module, p, tokens: int, l2_bytes: int, progress, baselines) -> list[Row]:
    import torch

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
    small = tokens <= HOST_TOKENS_MAX
    graphs, hosts = {}, {}
    for impl, fn in impls.items():
        progress(f"{name} m={tokens} {impl}")
        try:
            # GPU time from graph replays at every size: timed one call at a time, a call shorter than
            # its own launch measures the host, not the kernel.
            graphs[impl] = captured_graph(fn, arg_sets, GRAPH_CALLS)
            hosts[impl] = host_per_call(fn, arg_sets) if small else None
        except Exception as exc:  # a baseline that cannot run here is reported, not fatal to the run
            print(f"\n{name} m={tokens} {impl}: not timed ({type(exc).__name__}: {str(exc).splitlines()[0][:120]})")
            graphs.pop(impl, None)
    # Timed in turn, not one after another: torch.compile's own time for one kernel moved 6 % between two
    # runs an hour apart, fusegen's at 8 tokens 13 % (docs/bench/few-h100-s63), so a drift within a run
    # would otherwise land on whichever was timed second.
    rows = []
    for impl, samples in time_graphs_together(graphs, GRAPH_CALLS, GRAPH_ROUNDS).items():
        median, p10, p90 = _percentiles(samples)
        schedule = timed_schedule(p.route_for(tokens)) if impl == "fusegen" else ""
        rows.append(Row(name, tokens, impl, median, p10, p90, bytes_moved, bytes_moved / (median * 1e-6) / 1e12, hosts[impl], schedule))
    return rows


def timed_schedule(route) -> str:
    """The bench row's schedule column: a tuned schedule names its tuning run, so a table read later says
    which rows timed the planner's own schedule (no suffix) and which a measurement chose."""
    from .emit import schedule_summary
    from .plan import PLANNER_ORIGIN

    summary = schedule_summary(route)
    return summary if route.origin == PLANNER_ORIGIN else f"{summary}; from {route.origin}"


def sweep_tokens(hidden: int) -> int:
    return max(SWEEP_MIN_TOKENS, SWEEP_ELEMENTS // hidden)


def token_counts(p, tokens: tuple[int, ...], sweep: bool) -> list[int]:
    """The counts one kernel is timed at: those asked for (only its own if the spec pins one), then its
    sweep count where asked for and not among them."""
    counts = [m for m in tokens if not p.tokens or m == p.tokens]
    if sweep and not p.tokens and sweep_tokens(p.hidden) not in counts:
        counts.append(sweep_tokens(p.hidden))
    return counts


def not_timed(spec, tokens: tuple[int, ...], sweep: bool) -> str | None:
    """Why a kernel gets no timing at all (a spec that pins a count the run does not ask for), in a line that names
    the spec and what would time it; None where token_counts gives it a count."""
    if token_counts(spec, tokens, sweep):
        return None
    return f"{spec.name}: not timed: its spec pins tokens = {spec.tokens}, which is not among the counts asked for; add {spec.tokens} to --tokens"


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


def retargeted(written, hiddens, dtypes) -> list:
    """(KernelSpec, spec file) for every spec of `written` (the files' plans) as written, or re-targeted to each
    of `hiddens` and `dtypes` (bench's and tune's --hidden, --dtype), each re-targeted spec held to a spec
    file's rules (spec.checked_spec: a group or rope_dim the new width cannot hold is refused, not built and
    timed) and planned. Raises BuildErrors naming the file and the option for every one that breaks a rule."""
    from dataclasses import replace

    from .build import BuildErrors
    from .errors import ChainError, SpecError
    from .plan import plan
    from .spec import checked_spec

    specs, errors = [], []
    for written_plan in written:
        for data in variants(written_plan.spec, hiddens, dtypes):
            how = f" (re-targeted by --hidden/--dtype to hidden = {data['hidden']}, dtype = {data['dtype']})"
            try:
                spec = checked_spec(data, written_plan.spec_file)
                plan(spec, written_plan.spec_file)
            except SpecError as exc:
                errors.append(replace(exc, message=exc.message + how))
            except ChainError as exc:
                errors.append(SpecError(written_plan.spec_file, exc.key, exc.message + how))
            else:
                specs.append((spec, written_plan.spec_file))
    if errors:
        raise BuildErrors(errors)
    return specs


def run(
    spec_paths: list[Path],
    tokens: tuple[int, ...],
    out_dir: Path,
    hiddens=None,
    dtypes=None,
    baselines=None,
    tuning_file=None,
    sweep=False,
    baselines_up_to=None,
    host_costs=True,
):
    """`sweep`: also time each kernel at sweep_tokens(hidden); `baselines_up_to`: time the torch baselines
    only at counts up to this (each torch.compile compiles once per count, which dominates a sweep's time);
    `host_costs`: also measure each kernel's host µs per call."""
    import torch
    from tqdm import tqdm

    from .build import collect_spec_files, load_and_plan, stage
    from .compile import import_package
    from .plan import plan as make_plan
    from .tuning import TUNING_FILE, Tuning

    env = environment()
    # The winners of the GPU this runs on, as `fusegen build --gpu` would pick them.
    tuning = Tuning.load(Path(tuning_file or TUNING_FILE), env["gpu"])
    specs = []
    for spec, spec_file in retargeted(load_and_plan(collect_spec_files(spec_paths)), hiddens, dtypes):
        if why := not_timed(spec, tokens, sweep):
            print(why)  # and not built: nothing would time it
        else:
            specs.append((spec, spec_file))
    scratch = Path(tempfile.mkdtemp(prefix="fusegen-bench-"))
    # Built as `fusegen build` builds them (launch bounds from ptxas's registers included), compiled in parallel:
    # one at a time, the 28 kernels of the target matrix (and torch.compile's baselines) did not finish within
    # 150 s on the H200 machine; the timing loop loads each from TileLang's disk cache.
    built = stage([make_plan(spec, spec_file, tuning.routes(spec)) for spec, spec_file in specs], scratch, os.cpu_count() or 1)
    plans = [b.plan for b in built]
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    ceiling = copy_ceiling()
    rows: list[Row] = []
    costs: list[HostCost] = []
    baselines = BASELINES if baselines is None else baselines

    def baselines_at(m: int) -> tuple[str, ...]:
        return baselines if baselines_up_to is None or m <= baselines_up_to else ()

    total = len(plans) * host_costs + sum(1 + len(baselines_at(m)) for p in plans for m in token_counts(p, tokens, sweep))
    with tqdm(total=total, unit="timing", dynamic_ncols=True) as bar:

        def progress(label):
            bar.set_description(label[:60])
            bar.update(1)

        modules = [import_package(scratch / p.name, f"_fusegen_bench_{p.name}") for p in plans]
        out_dir.mkdir(parents=True, exist_ok=True)
        results = {"environment": env, "copy_tb_per_s": ceiling, "rows": []}
        for p, module in zip(plans, modules):
            for m in token_counts(p, tokens, sweep):
                rows += bench_kernel(module, p, m, l2, progress, baselines_at(m))
            if host_costs:
                progress(f"{p.name} host cost")
                try:
                    costs.append(host_cost(module, p.tokens or HOST_COST_TOKENS))
                except Exception as exc:  # reported like a kernel that cannot be timed, not fatal to the run
                    print(f"\n{p.name} host cost: not measured ({type(exc).__name__}: {str(exc).splitlines()[0][:120]})")
            results["rows"], results["host_costs"] = [asdict(r) for r in rows], [asdict(c) for c in costs]
            # Written after every kernel: a run cut short by a device call's time limit keeps what it measured.
            (out_dir / "bench.json").write_text(json.dumps(results, indent=1))
    plot(rows, ceiling, out_dir / "bench.png", plot_title(env))
    return results


def main(args) -> int:
    out_dir = Path(args.out_dir)
    results = run(
        [Path(p) for p in args.paths],
        tuple(args.tokens),
        out_dir,
        args.hidden,
        args.dtype,
        tuple(args.baselines),
        args.tuning,
        sweep=args.sweep_tokens,
        baselines_up_to=args.baselines_up_to,
        host_costs=args.host_cost,
    )
    text = results_markdown(results)
    print(text)
    (out_dir / "bench.md").write_text(text)
    if args.record:
        record(Path(args.record), [out_dir])
    return 0
