"""Writes perf/probe43's specs: the sweep's chains that variant reread now takes (schedule.wide_reread),
and random chains of the sweep's kinds at wide rows (perf/probe23's generator), for the held-out check of
the rule fitted on perf/probe42's two specs.

    python perf/probe43/census.py OUT_DIR [--seed N] [--count N]
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "perf" / "probe23"))
import census_specs  # noqa: E402

WIDTHS = (6144, 7168, 8192, 9216, 10240, 12288, 14336, 16384, 20480)


def generate(seed: int, count: int) -> dict[str, dict]:
    return census_specs.generate(seed, count, WIDTHS)


if __name__ == "__main__":
    code = census_specs.cli(generate, 43, 60, "perf/probe43's census (census.py --seed {seed}), held out")
    for spec in sorted((ROOT / "perf" / "sweep").glob("sweep_*.toml")):
        shutil.copy(spec, Path(sys.argv[1]) / spec.name)
    sys.exit(code)
