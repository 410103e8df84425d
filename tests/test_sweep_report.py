"""scripts/sweep_report.py judges issue 16's targets from saved runs: a target it has no rows for is
reported as not measured, never as met."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SWEEP_RUN = ROOT / "docs" / "bench" / "sweep" / "bench.json"
SPEC = ROOT / "perf" / "sweep" / "sweep_rms_rope_f32_512.toml"


def _run(tmp_path: Path, rows: list[dict]) -> tuple[int, str]:
    specs, run, out = tmp_path / "specs", tmp_path / "run", tmp_path / "out"
    specs.mkdir()
    run.mkdir()
    shutil.copy(SPEC, specs)
    saved = json.loads(SWEEP_RUN.read_text())
    (run / "bench.json").write_text(json.dumps({**saved, "rows": rows}))
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "sweep_report.py"), str(specs), str(run), "--out", str(out)], capture_output=True, text=True
    )
    return done.returncode, (out / "sweep.md").read_text()


def test_small_token_target_without_compile_rows_is_not_measured(tmp_path):
    rows = [r for r in json.loads(SWEEP_RUN.read_text())["rows"] if r["kernel"] == SPEC.stem]
    assert rows and all(r["impl"] == "fusegen" for r in rows)
    code, report = _run(tmp_path, rows)
    assert "no slower than torch.compile: not measured" in report and code == 1


def test_a_slower_small_count_is_named(tmp_path):
    rows = [r for r in json.loads(SWEEP_RUN.read_text())["rows"] if r["kernel"] == SPEC.stem]
    at_8 = {**rows[0], "tokens": 8, "median_us": 2.0}
    rows += [at_8, {**at_8, "impl": "compile", "median_us": 1.0}]
    code, report = _run(tmp_path, rows)
    assert f"NOT met: {SPEC.stem} at 8" in report and code == 1
