"""probe82: what quick tune's candidates make of the slowest unhinted rows of perf/probe79's fresh draw (seed
3801, 0.65–0.76 × copy untuned). Each under the QUICK candidates `fusegen tune --quick` would time
(perf/probe78's build_quick_candidates).

    .venv/bin/python perf/probe82/build.py perf/probe82/kernels
    python3 perf/proto/probe_time.py perf/probe82/kernels/time/kernels $OUT/time.json 2   # on the device, ~90 s"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "perf" / "proto"))
from probe_scripts import probe_script  # noqa: E402  (a sibling script)

DRAW = ROOT / "perf" / "probe79" / "kernels" / "draw" / "specs"
ROWS = ("hunt_3801_016", "hunt_3801_008", "hunt_3801_049", "hunt_3801_034", "hunt_3801_017")


if __name__ == "__main__":
    rows = {name.replace("3801", "82"): DRAW / f"{name}.toml" for name in ROWS}
    probe_script("probe78").build_quick_candidates(Path(sys.argv[1]), rows)
