"""Random valid specs run on the GPU against their references: scripts/random_hunt.py's draws (the
random-spec test's: every op, key and hint), built as `fusegen build` builds them, untuned, and each run at
token counts that reach every program of its routes and their edges — fresh inputs, poisoned outputs, the
spec's tolerances (checking.run_and_compare) — and, where the chain writes residual_out, once more with the
residual input passed as residual_out (the in-place update servers make).

    python scripts/gpu_hunt.py draw COUNT DIR [--seed N] [--hinted SHARE] [--widths W,W,...] [--narrow]
                                          [--specs-only]                  (here: DIR/specs, DIR/kernels)
    python scripts/gpu_hunt.py check DIR [DIR ...] [--jobs N]               (on the GPU machine)

`draw` writes the specs and runs `fusegen build DIR/specs --out DIR/kernels` in DIR (no tuning file there,
so every kernel has the planner's own schedule, as a user's new spec does); `--specs-only` writes the specs
alone (a probe that builds its own variants of a seed's draws). `check` prints a line per spec
(ok, or FAIL with each failure and the seed that replays it) and exits 1 if any failed.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import random_hunt  # noqa: E402  (the same draws as the CPU hunt, not a copy of them)

LARGEST_CHECKED = 16384  # a spec pinned to more tokens than this is drawn again without its count
CHECKED_TOKENS = (1, 3, 37, 255, 4096)


def draw(count: int, directory: Path, seed: int, hinted: float, widths: tuple[int, ...], narrow: bool, specs_only: bool = False) -> int:
    from test_injection import dump

    from fusegen.schedule import narrow_row

    rng = random.Random(seed)
    specs = directory / "specs"
    specs.mkdir(parents=True)
    written = 0
    for spec, checked in random_hunt.planned_draws(rng, hinted, widths):
        if spec.get("tokens", 0) > LARGEST_CHECKED or (narrow and not narrow_row(checked)):
            continue
        spec["name"] = f"hunt_{seed}_{written:03d}"
        (specs / f"{spec['name']}.toml").write_text(dump(spec))
        written += 1
        if written == count:
            break
    print(f"seed {seed}: {written} specs in {specs}", flush=True)
    if specs_only:
        return 0
    fusegen = Path(sys.executable).parent / "fusegen"
    return subprocess.run([str(fusegen), "build", "specs", "--out", "kernels"], cwd=directory).returncode


def token_counts(plan: dict) -> list[int]:
    """The spec's pinned count, or the fixed counts plus both ends of every route."""
    if plan["tokens"]:
        return [plan["tokens"]]
    ends = set(CHECKED_TOKENS)
    for route in plan["routes"]:
        ends.add(route["first_tokens"])
        if route["last_tokens"] is not None:
            ends.add(route["last_tokens"])
    return sorted(t for t in ends if t <= LARGEST_CHECKED)


def check_package(directory: Path) -> tuple[str, list[str]]:
    """Runs one built package at each of its counts; returns (its name, the failures)."""
    import torch

    from fusegen import checking
    from fusegen.compile import import_package

    plan = json.loads((directory / "plan.json").read_text())
    module = import_package(directory, f"_hunt_{directory.name}")
    failures = []
    for tokens in token_counts(plan):
        try:
            checking.run_and_compare(module, tokens)
        except Exception as exc:  # every count is checked: a failure is recorded, not fatal
            failures.append(f"{tokens} tokens: {type(exc).__name__}: {str(exc)[:600]}")
    names = [s.name for s in module.OUTPUTS]
    if "residual_out" in names:
        tokens = plan["tokens"] or 255
        inputs = checking.random_inputs(module, tokens, torch.Generator().manual_seed(tokens))
        reference = module.reference(*inputs)
        outputs = checking.poisoned_outputs(module, tokens)
        outputs[names.index("residual_out")] = inputs[[s.name for s in module.INPUTS].index("residual")]
        try:
            module.kernel(*inputs, out=module.Outputs(*outputs))
            torch.cuda.synchronize()
            checking.compare(module, outputs, reference, plan["dtype"])
        except Exception as exc:
            failures.append(f"in place at {tokens} tokens: {type(exc).__name__}: {str(exc)[:600]}")
    return directory.name, failures


def check_in_pool(packages: list[Path], jobs: int) -> tuple[int, list[Path]]:
    """Checks `packages` in a pool of `jobs` processes, printing a line each; returns how many failed and the
    packages a dead worker left unchecked (one process that dies — a crash in native code — breaks the
    whole pool, and every package still pending with it)."""
    failed, broken = 0, []
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(check_package, p): p for p in packages}
        for future in as_completed(futures):
            try:
                name, failures = future.result()
            except BrokenProcessPool:
                broken.append(futures[future])
                continue
            except Exception as exc:  # a package that does not import or compile is a finding too
                name, failures = futures[future].name, [f"{type(exc).__name__}: {str(exc)[:600]}"]
            failed += bool(failures)
            print(f"{name}: " + ("ok" if not failures else "FAIL\n    " + "\n    ".join(failures)), flush=True)
    return failed, sorted(broken)


def check(directories: list[Path], jobs: int) -> int:
    packages = sorted(p for d in directories for p in (d / "kernels").iterdir() if (p / "plan.json").is_file())
    failed, broken = check_in_pool(packages, jobs)
    # What a dead worker left is checked again in a fresh pool while that makes progress, then one package a
    # pool, so that a crash is pinned on the package that causes it and costs no other package its check.
    while len(broken) > 1:
        more, still = check_in_pool(broken, jobs)
        failed += more
        if len(still) == len(broken):
            break
        broken = still
    for package in broken:
        more, crashed = check_in_pool([package], 1)
        failed += more + len(crashed)
        for dead in crashed:
            print(f"{dead.name}: FAIL\n    its process died (checked alone)", flush=True)
    print(f"{len(packages)} specs checked, {failed} failed", flush=True)
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    drawing = commands.add_parser("draw")
    drawing.add_argument("count", type=int)
    drawing.add_argument("directory", type=Path)
    drawing.add_argument("--seed", type=int, default=int.from_bytes(os.urandom(4), "little"))
    drawing.add_argument("--hinted", type=float, default=0.3, help="share of draws that keep their schedule hints")
    drawing.add_argument(
        "--widths",
        default=",".join(map(str, random_hunt.MODEL_WIDTHS)),
        help="comma-separated hidden sizes half the draws take (the others: the random-spec test's)",
    )
    drawing.add_argument("--narrow", action="store_true", help="keep only rows narrower than a warp's 16-byte vectors")
    drawing.add_argument("--specs-only", action="store_true", help="write the specs, build nothing")
    checking = commands.add_parser("check")
    checking.add_argument("directories", type=Path, nargs="+")
    checking.add_argument("--jobs", type=int, default=8)
    args = parser.parse_args()
    if args.command == "draw":
        widths = tuple(int(w) for w in args.widths.split(","))
        return draw(args.count, args.directory, args.seed, args.hinted, widths, args.narrow, args.specs_only)
    return check(args.directories, args.jobs)


if __name__ == "__main__":
    sys.exit(main())
