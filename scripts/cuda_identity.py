"""Did a change to the emitters change the CUDA TileLang produces? Builds a fixed corpus of kernels with
the fusegen importable from the working directory, then compares two such builds program by program.

    cd OLD_TREE && python NEW_TREE/scripts/cuda_identity.py --build /tmp/cu-before
    cd NEW_TREE && python scripts/cuda_identity.py --build /tmp/cu-after
    python scripts/cuda_identity.py /tmp/cu-before /tmp/cu-after      # exit 1 if any program differs

The corpus (the same from either tree: it is read from this script's repository): every spec in specs/
and specs/models/ with tuning.json's routes, every case of tests/cases.py (PENDING_GPU_CASES too), the
routed cases with their two routes, the per-head and column-range cases with those routes too (one row
and two rows per block, prefetched or not), the oracle's extra specs (tests/test_reference_oracle.py:
the real-model ops, heads and column ranges at other widths), and `--random` valid specs drawn by
tests/test_random_specs.py from a fixed seed (the ones the planner refuses are skipped, and counted).
TileLang's disk cache is off, so each program is compiled afresh. Each kernel's CUDA is written as
OUT/<label>.cu in kernel.cu's form."""

from __future__ import annotations

import argparse
import os
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# fusegen from the tree being measured (the working directory), the corpus from this script's tree.
sys.path.insert(0, os.getcwd())
sys.path.append(str(ROOT / "tests"))

DEFAULT_RANDOM = 20
DEFAULT_SEED = 13


def corpus(random_specs: int, seed: int) -> dict[str, tuple[dict, str, tuple]]:
    """label -> (spec as JSON data, spec file shown in the header, tuned routes)."""
    from cases import CASES, PENDING_GPU_CASES, ROUTED, ROUTED_CASES, spec_for
    from test_random_specs import draw_valid
    from test_reference_oracle import EXTRA_SPECS

    from fusegen.spec import load_spec
    from fusegen.tuning import Tuning

    tuning = Tuning.load(ROOT / "tuning.json")
    entries = {}
    for path in sorted((ROOT / "specs").glob("*.toml")) + sorted((ROOT / "specs" / "models").glob("*.toml")):
        spec, _ = load_spec(path)
        entries[f"spec-{path.stem}"] = (spec.model_dump(mode="json"), str(path.relative_to(ROOT)), tuning.routes(spec))
    every_case = {**CASES, **PENDING_GPU_CASES}
    for name in every_case:
        entries[f"case-{name}"] = (spec_for(name), name, ())
    for name in ROUTED_CASES + tuple(name for name in every_case if heads_or_columns(spec_for(name))):
        entries[f"routed-{name}"] = (spec_for(name), name, ROUTED)
    for spec in EXTRA_SPECS:
        entries[f"oracle-{spec['name']}"] = (spec, spec["name"], ())
    rng = random.Random(seed)
    for k in range(random_specs):
        spec = draw_valid(rng)
        entries[f"random-{k:02d}"] = ({**spec, "name": f"random_{k:02d}"}, f"random_{k:02d}", ())
    return entries


def heads_or_columns(spec: dict) -> bool:
    """Whether a spec works per head or on a column range: programs of their own shape (issue 14)."""
    return "head_dim" in spec or any("columns" in op for op in spec["op"])


def build_one(label: str, spec_data: dict, spec_file: str, tuned: tuple, out: str) -> str:
    """Compiles one corpus kernel into OUT/<label>.cu; returns what happened, for the report."""
    import tempfile

    import tilelang

    from fusegen.checking import import_plan
    from fusegen.compile import cuda_sources, route_tilelang_logs
    from fusegen.emit import kernel_cu
    from fusegen.errors import ChainError
    from fusegen.plan import plan
    from fusegen.spec import KernelSpec

    route_tilelang_logs(verbose=False)
    tilelang.disable_cache()
    try:
        p = plan(KernelSpec.model_validate(spec_data), spec_file, tuned)
    except ChainError as exc:
        return f"{label}: refused by the planner ({exc.key}: {exc.message})"
    with tempfile.TemporaryDirectory() as scratch:
        sources = cuda_sources(import_plan(p, Path(scratch)))
    (Path(out) / f"{label}.cu").write_text(kernel_cu(p, sources))
    return f"{label}: {len(sources)} program(s)"


def build(out: Path, random_specs: int, seed: int, jobs: int, only: list[str] | None = None) -> None:
    from fusegen.compile import in_worker_processes

    out.mkdir(parents=True, exist_ok=True)
    entries = corpus(random_specs, seed)
    unknown = sorted(set(only or ()) - set(entries))
    if unknown:
        raise SystemExit(f"not in the corpus: {', '.join(unknown)}")
    arguments = [(label, *entry, str(out)) for label, entry in entries.items() if not only or label in only]
    for line in in_worker_processes(build_one, arguments, jobs):
        print(line)


def compare(before: Path, after: Path) -> int:
    """Prints each kernel whose programs differ (or that one build lacks); 1 if any, else 0."""
    from fusegen.emit import program_sources

    labels = sorted({p.stem for p in before.glob("*.cu")} | {p.stem for p in after.glob("*.cu")})
    differing = []
    for label in labels:
        old, new = before / f"{label}.cu", after / f"{label}.cu"
        if not (old.exists() and new.exists()):
            differing.append(f"{label}: only in {before if old.exists() else after}")
            continue
        old_programs, new_programs = program_sources(old.read_text()), program_sources(new.read_text())
        if len(old_programs) != len(new_programs):
            differing.append(f"{label}: {len(old_programs)} program(s) before, {len(new_programs)} after")
            continue
        differing += [f"{label}: program_{k} differs" for k, (a, b) in enumerate(zip(old_programs, new_programs)) if a != b]
    for line in differing:
        print(line)
    print(f"{len(labels)} kernels compared: {'identical CUDA' if not differing else f'{len(differing)} difference(s)'}")
    return 1 if differing else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dirs", nargs="*", type=Path, metavar="DIR", help="BEFORE_DIR AFTER_DIR to compare")
    parser.add_argument("--build", type=Path, metavar="OUT_DIR", help="compile the corpus with the working directory's fusegen")
    parser.add_argument("--random", type=int, default=DEFAULT_RANDOM, help=f"random valid specs in the corpus (default {DEFAULT_RANDOM})")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"seed of the random specs (default {DEFAULT_SEED})")
    parser.add_argument("--jobs", type=int, default=2, help="compile workers (default 2)")
    parser.add_argument(
        "--only", nargs="+", metavar="LABEL", help="build only these kernels of the corpus (case-rms_naive, spec-rms_norm, ...)"
    )
    args = parser.parse_args()
    if args.build:
        build(args.build, args.random, args.seed, args.jobs, args.only)
        return 0
    if len(args.dirs) != 2:
        parser.error("give BEFORE_DIR AFTER_DIR to compare, or --build OUT_DIR")
    return compare(*args.dirs)


if __name__ == "__main__":
    sys.exit(main())
