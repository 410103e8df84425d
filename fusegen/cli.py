"""Command line: `fusegen build`, `fusegen plan`, `fusegen bench`, `fusegen record`, `fusegen plot`,
`fusegen tune`, `fusegen schema`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .errors import SPEC_ERROR_EXIT, SpecError, UsageError, one_line

# The shell's status for a command stopped by SIGINT (128 + 2).
INTERRUPTED_EXIT = 130
# A build whose compiled CUDA contradicts its plan (a fusegen bug, not the spec's): like a crash, 1.
CUDA_CHECK_FAILED_EXIT = 1


def _report_errors(errors: list[SpecError]) -> int:
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    noun = "spec has" if len(errors) == 1 else "specs have"
    print(f"nothing written: {len(errors)} {noun} errors", file=sys.stderr)
    return SPEC_ERROR_EXIT


def _notify(message: str) -> None:
    """Progress and notices go to stderr, so stdout holds only the build's report."""
    print(message, file=sys.stderr, flush=True)


def _report_usage_error(exc: UsageError) -> int:
    for line in str(exc).splitlines():
        print(f"error: {line}", file=sys.stderr)
    return SPEC_ERROR_EXIT


def _check_named_tuning(args) -> None:
    """A tuning file named on the command line of a command that reads it is meant: missing, it is a typo
    (UsageError), not a silent untuned run. An empty table, {}, plans untuned."""
    if args.tuning and not Path(args.tuning).is_file():
        raise UsageError(f"--tuning {args.tuning}: no such file (a file holding {{}} plans untuned)")


def _tuning(args):
    """The tuning winners to plan with, and which file they come from (results depend on it, and the
    default is looked for in the working directory). A missing default is normal (untuned); a file
    named with --tuning that is missing is a UsageError."""
    from .tuning import TUNING_FILE, UNTUNED, Tuning

    _check_named_tuning(args)
    path = Path(args.tuning or TUNING_FILE)
    if not path.is_file():
        return UNTUNED, f"untuned (no {TUNING_FILE} in {Path.cwd()})"
    return Tuning.load(path, args.gpu), f"tuning: {path.resolve()} (winners for {args.gpu})"


def _what_was_written(stopped: str, out: Path) -> str:
    """Why a build stopped, and what of it reached `out`. Before the journal is written the build removes its
    staging directory: nothing changed. From then on the next build rolls the journal forward."""
    from .build import JOURNAL

    if (out / JOURNAL).exists():
        return one_line(f"{stopped}; the next `fusegen build` completes the move into {out}/")
    return one_line(f"{stopped}; nothing written")


def cmd_build(args) -> int:
    from .build import BuildErrors, CompileFailure, build
    from .describe import output_notes
    from .plan import PLANNER_ORIGIN
    from .schedule import spill_kept

    try:
        tuning, tuning_used = _tuning(args)
        built = build([Path(p) for p in args.paths], Path(args.out), args.jobs, tuning, _notify, args.verbose)
    except SpecError as exc:
        return _report_errors([exc])
    except BuildErrors as exc:
        return _report_errors(exc.errors)
    except UsageError as exc:
        return _report_usage_error(exc)
    except CompileFailure as exc:
        print(f"error: {exc}\nnothing written", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(_what_was_written("interrupted", Path(args.out)), file=sys.stderr)
        return INTERRUPTED_EXIT
    except OSError as exc:  # the file system refused a write: a full disk, a quota, a directory removed meanwhile
        problem = f"{exc.filename}: {exc.strerror}" if exc.filename and exc.strerror else str(exc)
        print(_what_was_written(f"error: {problem}", Path(args.out)), file=sys.stderr)
        return 1
    failing = 0
    for b in built:
        p = b.plan
        m = p.ledger_tokens
        fused, unfused = p.ledger.fused_bytes(m) / 1e6, p.ledger.unfused_bytes(m) / 1e6
        passed = sum(c.ok for c in b.checks)
        s = p.schedule
        registers = "/".join(str(r.registers) if r else "?" for r in b.resources)
        print(
            f"{p.name:<32} {s.variant:<8} {s.threads:>4} thr × {s.vector_bytes:>2} B  {registers:>7} reg  "
            f"ledger@{m}: {fused:7.1f} MB fused / {unfused:7.1f} MB unfused ({unfused / fused:4.2f}×)  "
            f"CUDA checks {passed}/{len(b.checks)}  {'written' if b.changed else 'unchanged'}"
        )
        for check in b.checks:
            if not check.ok:
                failing += 1
                print(f"    ✗ {check.name}: {check.detail}")
        for note in output_notes(p):
            print(f"    note: {note}")
        for index, (resources, routes) in enumerate(zip(b.resources, p.programs)):
            if resources and resources.stack_bytes:
                # Correct either way: each spilled word goes through local memory. The build lowers a planner's
                # bound ptxas meets only by spilling; where the block a lower bound gives up ran faster than
                # the spill cost, it keeps it (schedule.spill_kept). A tuning winner was timed as it is built.
                if routes[0].origin != PLANNER_ORIGIN:
                    cost = "correct; a tuning winner, timed as it is, spill and all"
                elif kept := spill_kept(routes[0].schedule, resources.stack_bytes, p.writes_row):
                    cost = f"correct; {kept}; `fusegen tune` times other schedules"
                else:
                    cost = "correct, but slower; `fusegen tune` times other schedules"
                print(
                    f"    ! program_{index}: ptxas spilled ({resources.stack_bytes} B of stack frame at {resources.registers} registers "
                    f"a thread): {cost}"
                )
    print(
        one_line(f"{len(built)} kernel(s) in {Path(args.out).resolve()}/; {tuning_used}")
        + (f"; {failing} CUDA check(s) failed" if failing else "")
    )
    # The kernels are written (their CUDA is what a person reads to see why), but a failed check means
    # fusegen planned one thing and TileLang emitted another: a script or CI must not take it for success.
    return CUDA_CHECK_FAILED_EXIT if failing else 0


def cmd_plan(args) -> int:
    from .build import display_path, plan_spec
    from .plan import plan_as_dict
    from .spec import load_spec

    try:
        spec, text = load_spec(Path(args.spec))
        tuning, tuning_used = _tuning(args)
        p = plan_spec(spec, text, display_path(Path(args.spec)), tuning)
    except SpecError as exc:
        return _report_errors([exc])
    except UsageError as exc:
        return _report_usage_error(exc)
    # On stderr: stdout is the plan, and with --json a JSON document.
    print(tuning_used, file=sys.stderr)
    if args.json:
        print(json.dumps(plan_as_dict(p), indent=2, sort_keys=True))
        return 0
    from .describe import describe_plan

    print(describe_plan(p))
    return 0


# A machine without a usable GPU is not a spec error (SPEC_ERROR_EXIT): the spec may be fine elsewhere.
NO_GPU_EXIT = 1


def gpu_problem(command: str) -> str | None:
    """Why this machine cannot run `fusegen <command>` (it times kernels built for sm_90a), or None."""
    import torch

    if not torch.cuda.is_available():
        cuda_build = "yes" if torch.version.cuda else "no"
        return f"fusegen {command} needs a CUDA GPU (Hopper, sm_90a); none is visible (torch {torch.__version__}, CUDA build: {cuda_build})"
    major, minor = torch.cuda.get_device_capability()
    if (major, minor) != (9, 0):
        return f"fusegen {command} needs a Hopper GPU (sm_90a); found {torch.cuda.get_device_name()} (sm_{major}{minor})"
    return None


# What bench and tune import beyond fusegen's own dependencies: the `bench` extra (pip install "fusegen[bench]").
EXTRA_MODULES = {"bench": ("tqdm", "matplotlib"), "tune": ("tqdm",)}


def missing_extras(command: str) -> str | None:
    """The sentence for a bench or tune run whose progress bar or plot module is not installed: said before
    any work, where the import had failed as a traceback (tqdm as the run began, matplotlib after the timing)."""
    import importlib.util

    missing = [name for name in EXTRA_MODULES[command] if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    return f'fusegen {command} needs {" and ".join(missing)}, not installed here: pip install "fusegen[bench]" (scripts/setup.sh does)'


def _reported(problem: str | None, exit_code: int) -> int | None:
    """`exit_code` once `problem` is said on stderr; None where there is none."""
    if problem is None:
        return None
    print(f"error: {problem}", file=sys.stderr)
    return exit_code


def _report_gpu_problem(command: str) -> int | None:
    return _reported(gpu_problem(command), NO_GPU_EXIT)


def _report_usage_problem(problem: str | None) -> int | None:
    return _reported(problem, SPEC_ERROR_EXIT)


def _report_spec_problems(args) -> int | None:
    """bench and tune plan their specs (re-targeted by --hidden and --dtype) before asking for a GPU: a wrong
    path or spec is the user's to fix wherever they run, and says so before "needs a GPU" does."""
    from .bench import retargeted
    from .build import BuildErrors, collect_spec_files, load_and_plan

    try:
        retargeted(load_and_plan(collect_spec_files([Path(p) for p in args.paths])), args.hidden, args.dtype)
    except SpecError as exc:
        return _report_errors([exc])
    except BuildErrors as exc:
        return _report_errors(exc.errors)
    return None


def cmd_bench(args) -> int:
    from .bench import main as bench_main
    from .bench_report import RecordError, check_record_target
    from .build import check_output_directory

    try:
        _check_named_tuning(args)
        check_output_directory(Path(args.out_dir), "--out-dir")
        if args.record:
            check_record_target(Path(args.record), Path(args.out_dir))
    except UsageError as exc:
        return _report_usage_error(exc)
    except RecordError as exc:
        print(f"error: --record {exc}", file=sys.stderr)
        return SPEC_ERROR_EXIT
    if problem := _report_usage_problem(missing_extras("bench")) or _report_spec_problems(args) or _report_gpu_problem("bench"):
        return problem
    try:
        return bench_main(args)
    except RecordError as exc:  # the file changed during the run: the results stay where they were written
        print(f"error: --record {exc}; the results are in {args.out_dir}/ (`fusegen record` writes them later)", file=sys.stderr)
        return SPEC_ERROR_EXIT


def cmd_record(args) -> int:
    from .bench_report import RecordError, record

    try:
        record(Path(args.benchmarks), [Path(d) for d in args.results])
    except RecordError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return SPEC_ERROR_EXIT
    print(one_line(f"{args.benchmarks}: {len(args.results)} section(s) written"))
    return 0


def cmd_plot(args) -> int:
    from .bench_report import RecordError, replot

    try:
        for results_dir in args.results:
            print(f"{replot(Path(results_dir))} written")
    except RecordError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return SPEC_ERROR_EXIT
    return 0


def _check_tuning_writable(named: str) -> None:
    """tune updates the tuning file after each spec it tunes (atomically: a new file beside it, renamed over
    it): the file's directory must exist and take a new file, and the file itself not be a directory. Said
    before any tuning, not as a traceback after the first spec's minutes."""
    path = Path(named)
    if path.is_dir():
        raise UsageError(f"--tuning {named}: is a directory; it names the tuning file tune writes")
    if not path.parent.is_dir():
        raise UsageError(f"--tuning {named}: {path.parent} is not a directory; tune writes the file there and makes no directories")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise UsageError(f"--tuning {named}: {path.parent} is not writable")


def cmd_tune(args) -> int:
    from .build import check_output_directory
    from .tune import main as tune_main

    try:
        check_output_directory(Path(args.out_dir), "--out-dir")
        _check_tuning_writable(args.tuning)
    except UsageError as exc:
        return _report_usage_error(exc)
    try:
        return (
            _report_usage_problem(missing_extras("tune")) or _report_spec_problems(args) or _report_gpu_problem("tune") or tune_main(args)
        )
    except SpecError as exc:
        return _report_errors([exc])


def spec_json_schema() -> dict:
    """The JSON Schema of a spec file, from the pydantic models: every key with what it means and its
    allowed values, for editors that complete and check TOML against a schema."""
    from .spec import KernelSpec

    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **KernelSpec.model_json_schema(),
        "title": "fusegen kernel spec",
        "description": "One fused kernel: a chain of ops on rows of `hidden` values (see README.md, Spec reference).",
    }


def cmd_schema(args) -> int:
    print(json.dumps(spec_json_schema(), indent=2, ensure_ascii=False))
    return 0


def _gpu_count(text: str) -> str:
    """argparse type of --gpus: "all" or a whole number of at least one (checked against the GPUs later)."""
    return text if text == "all" else str(_at_least_one(text))


def _shard(text: str) -> tuple[int, int]:
    """argparse type of the internal --shard I/N: the I-th (from 0) of N shards."""
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit() and int(index) < int(count)):
        raise argparse.ArgumentTypeError(f"must be I/N with 0 <= I < N, not {text!r}")
    return int(index), int(count)


def _at_least_one(text: str) -> int:
    """argparse type of counts (--jobs, --tokens): a whole number, at least one."""
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, not {text!r}")
    return count


def _tuning_options(command) -> None:
    from .tuning import DEFAULT_GPU, TUNING_FILE

    command.add_argument(
        "--tuning", help=f"tuning winners to build with (default: {TUNING_FILE} in the working directory; untuned if absent)"
    )
    command.add_argument("--gpu", default=DEFAULT_GPU, help=f"whose winners in the tuning file (default: {DEFAULT_GPU})")


def version_line() -> str:
    """fusegen's version and those of the two libraries a kernel's behaviour depends on, as installed
    (read from their metadata: importing tilelang takes seconds)."""
    from importlib.metadata import PackageNotFoundError, version

    from . import __version__

    def installed(distribution: str) -> str:
        try:
            return version(distribution)
        except PackageNotFoundError:
            return "not installed"

    return f"fusegen {__version__} (tilelang {installed('tilelang')}, torch {installed('torch')})"


def parser() -> argparse.ArgumentParser:
    from .tune import QUICK_CANDIDATES

    root = argparse.ArgumentParser(prog="fusegen", description="Generate fused TileLang kernels from TOML op-chain specs.")
    root.add_argument("--version", action="version", version=version_line(), help="print the versions of fusegen, tilelang and torch")
    sub = root.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="plan, emit and compile every spec into generated/")
    b.add_argument("paths", nargs="+", help="spec files or directories of *.toml specs")
    b.add_argument("--out", default="generated", help="output directory (default: generated)")
    b.add_argument("--jobs", type=_at_least_one, default=None, help="parallel compilations (default: CPU count)")
    b.add_argument("-v", "--verbose", action="store_true", help="also show TileLang's log of each compilation (stderr)")
    _tuning_options(b)
    b.set_defaults(func=cmd_build)
    p = sub.add_parser("plan", help="print the plan of one spec")
    p.add_argument("spec", help="the spec file (TOML)")
    _tuning_options(p)
    p.add_argument("--json", action="store_true", help="the plan as JSON (what plan.json holds)")
    p.set_defaults(func=cmd_plan)
    bench = sub.add_parser("bench", help="time kernels on the GPU against copy, eager and torch.compile")
    bench.add_argument("paths", nargs="+", help="spec files or directories")
    bench.add_argument(
        "--tokens",
        type=_at_least_one,
        nargs="+",
        default=[1, 8, 256, 4096, 16384],
        help="token counts M to time (default: 1 8 256 4096 16384; a spec that pins tokens only at that count, if listed)",
    )
    bench.add_argument("--out-dir", default="bench-results", help="where bench.json, bench.md and bench.png go (default: bench-results)")
    bench.add_argument("--hidden", type=int, nargs="+", help="re-target every spec to these hidden sizes")
    bench.add_argument("--dtype", nargs="+", choices=["float16", "bfloat16", "float32"], help="re-target every spec to these dtypes")
    bench.add_argument(
        "--baselines",
        nargs="*",
        default=["eager", "compile", "compile_dynamic"],
        choices=["eager", "compile", "compile_dynamic"],
        help="the same chain in torch to time against: eager, torch.compile static and dynamic (default: all three; none if the option names none)",
    )
    bench.add_argument(
        "--sweep-tokens",
        action="store_true",
        help="also time each kernel at M = max(16384, 2^26 / hidden) tokens, so narrow rows move enough bytes to be judged against copy",
    )
    bench.add_argument(
        "--baselines-up-to",
        type=_at_least_one,
        metavar="TOKENS",
        help="time the baselines only at token counts up to this (torch.compile compiles once per count)",
    )
    bench.add_argument(
        "--no-host-cost",
        dest="host_cost",
        action="store_false",
        help="skip the host µs per call of each kernel (about a second each; a sweep does not need it)",
    )
    bench.add_argument(
        "--tuning", help="tuning winners to time (this GPU's; default: tuning.json in the working directory; untuned if absent)"
    )
    bench.add_argument(
        "--record", metavar="FILE", help="also write the results into this file's section for --out-dir (see `fusegen record`)"
    )
    bench.set_defaults(func=cmd_bench)
    rec = sub.add_parser("record", help="write saved bench results into their sections of a markdown file (no GPU)")
    rec.add_argument("benchmarks", help="the markdown file, e.g. BENCHMARKS.md")
    rec.add_argument("results", nargs="+", help="bench --out-dir directories; each fills the section marked with its path")
    rec.set_defaults(func=cmd_record)
    replot = sub.add_parser("plot", help="render bench.png again from a saved bench.json (no GPU)")
    replot.add_argument("results", nargs="+", help="bench --out-dir directories holding bench.json")
    replot.set_defaults(func=cmd_plot)
    tune = sub.add_parser("tune", help="search schedules on the GPU per token bucket; winners go to the tuning file build reads")
    tune.add_argument("paths", nargs="+", help="spec files or directories")
    tune.add_argument("--hidden", type=int, nargs="+", help="tune every spec re-targeted to these hidden sizes")
    tune.add_argument("--dtype", nargs="+", choices=["float16", "bfloat16", "float32"], help="tune every spec re-targeted to these dtypes")
    tune.add_argument(
        "--out-dir", default="tune-results", help="where tune.json (every candidate's times) and tune.md go (default: tune-results)"
    )
    tune.add_argument(
        "--quick",
        type=_at_least_one,
        nargs="?",
        const=QUICK_CANDIDATES,
        metavar="K",
        help=f"time only K candidates: the planner's schedule, the programs a rule of the planner's or the build's replaced, it under its two tightest launch bounds and on twice and half its threads, two holding 24 warps an SM, two streams holding the next row in registers, and those the planner's rules rank highest (default K: {QUICK_CANDIDATES})",
    )
    tune.add_argument("--jobs", type=_at_least_one, default=None, help="parallel compilations (default: CPU count)")
    tune.add_argument(
        "--gpus",
        type=_gpu_count,
        default="1",
        help="tune on this many GPUs of the host at once, or 'all': one process per GPU, each on every N-th spec (default: 1)",
    )
    tune.add_argument("--shard", type=_shard, default=None, help=argparse.SUPPRESS)  # set by --gpus for its processes
    tune.add_argument("--tuning", default="tuning.json", help="the tuning file to update (default: tuning.json)")
    tune.add_argument("--gpu", default=None, help="the name to record the winners under (default: the name the GPU reports)")
    tune.set_defaults(func=cmd_tune)
    schema = sub.add_parser("schema", help="print the JSON Schema of a spec file, for editor completion and checking")
    schema.set_defaults(func=cmd_schema)
    return root


def main(argv: list[str] | None = None) -> int:
    # Reports use a few non-ASCII symbols (×, →); a terminal without UTF-8 gets escapes, not a crash.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    args = parser().parse_args(argv)
    try:
        status = args.func(args)
        sys.stdout.flush()  # inside the try: a closed pipe is found here, not at interpreter exit
        return status
    except BrokenPipeError:
        # The reader went away (`fusegen schema | head`): stop quietly, as other command-line tools do.
        # Python would print a second BrokenPipeError while flushing stdout at exit, so point it at devnull.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a command a closed pipe stopped


if __name__ == "__main__":
    sys.exit(main())
