"""Random valid specs with one to two keys (anywhere: top level, an op, [outputs], [schedule], or a key no table
has) set to a boundary value of any TOML type, or removed, each then loaded and planned as `fusegen build` would
(tests/test_random_specs.py's build_path): a spec must be planned or refused with a one-line SpecError that names
its file — any other exception, or a message without the file, is a finding (CPU, no compile; ~2000 specs a second).

    python scripts/spec_fuzz.py SECONDS [--seed N]

Prints each finding with its spec, then the counts; exits 1 if any."""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import test_random_specs as draws  # noqa: E402  (the test's drawing and build path, not a copy of them)

from fusegen.errors import SpecError  # noqa: E402

BOUNDARY_VALUES = (
    *(0, -1, 1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 96, 127, 128, 255, 256, 511, 512, 1023, 1024, 1025),
    *(2047, 2048, 4095, 4096, 65535, 65536, 65537, 2**24, 2**24 + 1, 2**31 - 2, 2**31 - 1, 2**31, 2**32, 2**53 + 1),
    *(2**63 - 1, -(2**63), 0.0, -0.0, 0.5, 1.0, 1e-45, 1.17e-38, 1e-39, 3.4e38, 3.5e38, 1e308),
    *(float("inf"), float("-inf"), float("nan"), True, False),
    *("", "auto", "token", "row", "column", "head", "tail", "neox", "gptj", "cache", "per_token", "e4m3fn", "e5m2"),
    *("ue8m0", "fp32", "registers", "shared", "stream", "fragment", "reread", "naive", "splitk"),
    *([0, 512], [512, 0], [0, 0], [8, 16], [-8, 8], [0, 2**31], [0], [], {}, [1, 2, 3], {"a": 1}),
)
# Keys a table may lack: set where a draw did not (every key the spec contract knows).
KEYS = (
    "head_dim", "tokens", "hidden", "eps", "weight", "bias", "weight_offset", "over", "columns", "rope_dim", "span",
    "style", "source", "max_position", "group_size", "fp8", "scale", "amax_floor", "scale_layout", "factor", "variant",
    "threads", "block_m", "blocks_per_sm", "ring_slots", "ring", "prefetch", "joint_reduction", "row_split",
    "rows_share_threads", "blk_k", "y", "residual", "mean", "rstd",
)  # fmt: skip


def places(spec: dict) -> list[tuple]:
    """Every key's path in `spec`, and a new key's (None) at the top level and in each table."""
    found = [("__top__", None), ("outputs", None), ("schedule", None)]
    for key, value in spec.items():
        if isinstance(value, dict):
            found += [(key, inner) for inner in value]
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            for index, op in enumerate(value):
                found += [(key, index, inner) for inner in op] + [(key, index, None)]
        else:
            found.append(("__top__", key))
    return found


def mutated(rng: random.Random) -> dict:
    spec = draws.draw_valid(rng)
    for _ in range(rng.choice((1, 1, 1, 2))):
        *table_path, key = rng.choice(places(spec))
        table = spec
        for part in table_path:
            table = table if part == "__top__" else table[part] if isinstance(table, list) else table.setdefault(part, {})
        if not isinstance(table, dict):  # a table an earlier change replaced by a value
            continue
        key = key or rng.choice(KEYS)
        if key in table and rng.random() < 0.1:
            del table[key]
        else:
            table[key] = copy.deepcopy(rng.choice(BOUNDARY_VALUES))
    return spec


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seconds", type=float)
    parser.add_argument("--seed", type=int, default=int.from_bytes(os.urandom(4), "little"))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(f"seed {args.seed}", flush=True)
    tried = planned = findings = 0
    stop = time.monotonic() + args.seconds
    while time.monotonic() < stop:
        spec = mutated(rng)
        tried += 1
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # the planner's notes on refused draws
                draws.build_path(spec)
            planned += 1
        except SpecError as exc:
            if "random.toml" not in str(exc) or "\n" in str(exc):
                findings += 1
                print(f"MESSAGE {str(exc)!r}\n  spec: {spec}", flush=True)
        except Exception as exc:  # anything but a SpecError is a finding: say which spec
            findings += 1
            print(f"RAISED {type(exc).__name__}: {str(exc)[:300]}\n  spec: {spec}", flush=True)
    print(f"seed {args.seed}: {tried} mutated specs, {planned} planned, {findings} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
