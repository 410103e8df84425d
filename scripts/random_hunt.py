"""Random valid specs, each planned, compiled for sm_90a, CUDA-checked and its reference checked against the
float64 oracle: the random-spec test's draws, many more than the test compiles, for a session's hunt (CPU).

    python scripts/random_hunt.py COUNT [--seed N] [--hinted SHARE] [--widths W,W,...]

The draws are tests/test_random_specs.py's (draw_valid): every op, key and schedule hint it knows.
--hinted: the share of draws that keep their schedule hints; the others are planned without any, as a
user's new spec is. --widths: hidden sizes drawn instead of the test's own for half of the draws (model
widths it lacks). A line per spec, after the `seed N` of its reference check's inputs; exits 1 if any
failed. The hunt's own seed is printed first and last, so a run repeats exactly.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import test_random_specs as draws  # noqa: E402  (the test's drawing and checking, not a copy of it)

from fusegen.checking import cuda_check_failures  # noqa: E402
from fusegen.errors import SpecError  # noqa: E402

MODEL_WIDTHS = (576, 896, 1152, 1280, 1792, 2304, 2688, 3200, 4608, 5376, 6656, 8960, 9216, 10240, 13824, 14336, 18432, 20480)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("count", type=int, help="specs to compile and check")
    parser.add_argument("--seed", type=int, default=int.from_bytes(os.urandom(4), "little"))
    parser.add_argument("--hinted", type=float, default=0.3, help="share of draws that keep their schedule hints")
    parser.add_argument("--widths", default=",".join(map(str, MODEL_WIDTHS)), help="hidden sizes for half of the draws")
    args = parser.parse_args()
    logging.getLogger("tilelang").setLevel(logging.WARNING)
    print(f"seed {args.seed}", flush=True)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="fusegen-hunt-") as scratch:
        checked, failed = hunt(args, rng, Path(scratch))
    print(f"seed {args.seed}: {checked} specs compiled and checked, {failed} failed")
    return 1 if failed else 0


def planned_draws(rng: random.Random, hinted: float, widths: tuple[int, ...]):
    """Yields (drawn spec, checked KernelSpec) for every draw the planner accepts: the test's draws, half
    of them at `widths`, a share `hinted` keeping their schedule hints. A refusal is printed, not yielded."""
    test_widths = draws.HIDDENS
    while True:
        draws.HIDDENS = widths if rng.random() < 0.5 else test_widths
        spec = draws.draw_valid(rng)
        draws.HIDDENS = test_widths
        if rng.random() < 1 - hinted:
            spec["schedule"] = {}
        try:
            yield spec, draws.build_path(spec)
        except SpecError as exc:  # a hint the planner cannot meet at this width, as the test allows
            print(f"refused {spec['hidden']}: {exc.key}: {exc}", flush=True)


def hunt(args: argparse.Namespace, rng: random.Random, scratch: Path) -> tuple[int, int]:
    """Checks args.count planned draws; returns (checked, failed)."""
    checked = failed = 0
    widths = tuple(int(w) for w in args.widths.split(","))
    for spec, kernel in planned_draws(rng, args.hinted, widths):
        if checked == args.count:
            break
        checked += 1
        started = time.monotonic()
        try:
            failures = cuda_check_failures(kernel, scratch / f"spec{checked}")
            draws.assert_reference_matches_oracle(draws.for_reference(spec), scratch / "references")
        except Exception as exc:  # any failure is a finding: say which spec, and go on
            failures = [repr(exc)[:400]]
        failed += bool(failures)
        ops = " → ".join(op["kind"] for op in spec["op"])
        verdict = f"FAILED {failures} {spec}" if failures else "ok"
        print(
            f"{verdict} {time.monotonic() - started:.0f}s {spec['dtype']} {spec['hidden']} head_dim={spec.get('head_dim')} {ops}",
            flush=True,
        )
    return checked, failed


if __name__ == "__main__":
    sys.exit(main())
