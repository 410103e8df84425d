"""Renders the GPU verification record (docs/gpu-verification.md) from the JSON the GPU test session
writes (FUSEGEN_GPU_REPORT) and the compute-sanitizer logs (memcheck, racecheck).
Usage: python -m fusegen.verification REPORT.json OUT.md [SANITIZER.log ...]"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

from .errors import one_line


def _kernel_of(nodeid: str) -> str:
    """Groups a test under the kernel it proves: a generated kernel, a matrix case, or an edge-case test."""
    path, _, test = nodeid.partition("::")
    if path.startswith("generated/"):
        return path.split("/")[1]
    function, _, params = test.partition("[")
    if "matrix" in path and params:
        return f"matrix case {params.rstrip(']').split('-')[0]}"
    return f"{Path(path).stem}::{function}"


_SANITIZER_LINES = ("ERROR SUMMARY", "RACECHECK SUMMARY", "sanitized ", "memcheck exit", "racecheck exit")


def render(report: dict, sanitizer_logs: dict[str, str]) -> str:
    """sanitizer_logs: the tool's name (the log's file stem) -> the log."""
    env = report["environment"]
    tests = report["tests"]
    counts = Counter(t["outcome"] for t in tests)
    per_kernel: dict[str, Counter] = defaultdict(Counter)
    for t in tests:
        per_kernel[_kernel_of(t["test"])][t["outcome"]] += 1
    lines = [
        "# GPU verification record",
        "",
        "Written by `python -m fusegen.verification` from the GPU test session; do not edit by hand.",
        "",
        "| | |",
        "|---|---|",
        *(f"| {k} | {v} |" for k, v in env.items()),
        f"| pytest exit status | {report['exit_status']} |",
        "",
        f"**{counts.get('passed', 0)} passed, {counts.get('failed', 0)} failed, {counts.get('skipped', 0)} skipped** "
        "(`pytest -m gpu tests generated`).",
        "",
        "| kernel or case | passed | failed | skipped |",
        "|---|---:|---:|---:|",
        *(f"| {k} | {c.get('passed', 0)} | {c.get('failed', 0)} | {c.get('skipped', 0)} |" for k, c in sorted(per_kernel.items())),
    ]
    failed = [t["test"] for t in tests if t["outcome"] == "failed"]
    if failed:
        lines += ["", "Failed:", *(f"- `{name}`" for name in failed)]
    for tool, log in sanitizer_logs.items():
        summary = [line for line in log.splitlines() if any(mark in line for mark in _SANITIZER_LINES)]
        lines += ["", f"## compute-sanitizer {tool}", "", "```", *summary, "```"]
    return "\n".join(lines) + "\n"


USAGE = "usage: python -m fusegen.verification REPORT.json OUT.md [SANITIZER.log ...]"


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr)
        return 2
    try:
        report = json.loads(Path(argv[0]).read_text())
        logs = {Path(log).stem: Path(log).read_text() for log in argv[2:]}
    except (OSError, ValueError) as error:
        print(one_line(f"fusegen.verification: {error}"), file=sys.stderr)
        return 2
    out = Path(argv[1])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(report, logs))
    print(one_line(f"wrote {out}"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
