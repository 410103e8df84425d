"""`fusegen record` and `fusegen plot` run where the results are read, not where they were measured: with
no torch, TileLang or triton installed, they record and replot a saved bench.json."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAVED = ROOT / "docs" / "bench" / "examples" / "bench.json"
GPU_PACKAGES = ("torch", "tilelang", "triton")

# Every attempt is refused and remembered: an import that the code under test catches and recovers from
# must fail the test too, since on a machine without these packages it would have been a different path.
RECORD_AND_PLOT_WITHOUT_GPU_PACKAGES = f"""
import importlib.abc, sys

attempted = []

class NoGpuPackages(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {GPU_PACKAGES!r}:
            attempted.append(name)
            raise ImportError(f"{{name}} is not installed (blocked by the test)")

sys.meta_path.insert(0, NoGpuPackages())
from fusegen.cli import main

print("record", main(["record", "BENCHMARKS.md", "results"]))
print("plot", main(["plot", "results"]))
print("attempted", sorted(set(attempted)))
"""


def test_record_and_plot_import_neither_torch_nor_tilelang(tmp_path):
    (tmp_path / "results").mkdir()
    shutil.copy(SAVED, tmp_path / "results" / "bench.json")
    (tmp_path / "BENCHMARKS.md").write_text(
        "before\n<!-- fusegen bench results: results -->\nstale\n<!-- end of fusegen bench results -->\nafter\n", encoding="utf-8"
    )
    result = subprocess.run(
        [sys.executable, "-c", RECORD_AND_PLOT_WITHOUT_GPU_PACKAGES],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.stdout.splitlines() == [
        "BENCHMARKS.md: 1 section(s) written",
        "record 0",
        "results/bench.png written",
        "plot 0",
        "attempted []",
    ], result.stdout + result.stderr
    recorded = (tmp_path / "BENCHMARKS.md").read_text(encoding="utf-8")
    assert "stale" not in recorded and "| kernel | tokens |" in recorded and recorded.endswith("after\n")
    assert (tmp_path / "results" / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
