"""probe54: the sector_rows rule as committed (groups of 8 and 16, after perf/probe52 dropped groups of 32)
on a fresh draw it has not seen: column-major scales in groups of 8–16, every spec whose plan it changes
as NAME_old (the tree before the rule) and NAME_new (this tree), untuned (perf/probe52's build_changed).

    git worktree add /tmp/oldwt 266c4a9
    .venv/bin/python perf/probe54/build.py /tmp/oldwt perf/probe54/kernels
    ROUNDS=1 bash perf/probe51/call.sh perf/probe54/kernels                 # on the device"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from fusegen.ops.quant_fp8 import SECTOR_ROWS_MAX_GROUP

ROOT = Path(__file__).resolve().parents[2]
# probe52's build.py by its path: its own `from build import …` is probe51's, which the name would shadow.
_spec = importlib.util.spec_from_file_location("probe52_build", ROOT / "perf" / "probe52" / "build.py")
probe52 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(probe52)

SEED = 5103
DRAWN = 16


def ruled_groups(spec: dict) -> bool:
    return probe52.column_group_scales(spec) and all(
        op["group_size"] <= SECTOR_ROWS_MAX_GROUP
        for op in spec["op"]
        if op["kind"] == "quant_fp8" and op.get("group_size", "token") != "token"
    )


if __name__ == "__main__":
    probe52.build_changed(Path(sys.argv[1]), Path(sys.argv[2]), probe52.drawn_specs(SEED, DRAWN, ruled_groups))
