"""Checks the probe kernels of a `fusegen build --out` directory whose names contain PATTERN against their
references (checking.run_and_compare: fresh random inputs, poisoned outputs, the spec's tolerances) at 1, 37
and 4096 tokens and at the sweep count, for probe variants that no test of the suite covers (a schedule or
a planner limit the tree does not allow yet).

    python perf/proto/probe_check.py BUILD PATTERN

Prints one line per kernel and count, `ok` or `FAIL` with the first line of the failure; exits 1 on any
failure."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

from fusegen import checking
from fusegen.bench import sweep_tokens


def main(build: Path, pattern: str) -> int:
    sys.path.insert(0, str(build.parent))
    failed = 0
    for directory in sorted(p for p in build.iterdir() if (p / "plan.json").is_file() and pattern in p.name):
        module = importlib.import_module(f"{build.name}.{directory.name}")
        hidden = json.loads((directory / "plan.json").read_text())["hidden"]
        for tokens in (1, 37, 4096, sweep_tokens(hidden)):
            try:
                checking.run_and_compare(module, tokens)
                verdict = "ok"
            except Exception as exc:  # every kernel is checked; a failure is reported, not fatal
                failed += 1
                verdict = f"FAIL {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
            print(f"{directory.name:50s} {tokens:6d} {verdict}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2]))
