"""Keeps, of a directory of specs, those whose planned schedules (reasons aside) differ between the fusegen
tree at BASE_TREE and this checkout's — so a probe builds and times only what a rule change moved — and at
most --keep of them (in name order); specs either tree refuses are removed too.

    python perf/proto/changed_plans.py BASE_TREE SPEC_DIR [--keep N]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Not part of the program a plan compiles to: the reasons and an estimate stated in them.
PLANS = """
import json, sys
from dataclasses import asdict
from pathlib import Path
from fusegen.build import load_and_plan
out = {}
for f in sorted(Path(sys.argv[1]).glob("*.toml")):
    try:
        (plan,) = load_and_plan([f])
    except Exception:  # a spec this tree refuses
        out[f.name] = None
        continue
    out[f.name] = [{k: v for k, v in asdict(r.schedule).items() if k not in ("reasons", "register_estimate")} for r in plan.routes]
print(json.dumps(out))
"""


def plans(tree: Path, specs: Path) -> dict:
    run = subprocess.run(
        [sys.executable, "-c", PLANS, str(specs)],
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        cwd="/",
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(run.stdout)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("base_tree", type=Path)
    parser.add_argument("spec_dir", type=Path)
    parser.add_argument("--keep", type=int, default=10**6)
    args = parser.parse_args()
    before, after = plans(args.base_tree, args.spec_dir), plans(ROOT, args.spec_dir)
    kept = [name for name in sorted(after) if after[name] is not None and before[name] is not None and before[name] != after[name]]
    for name in after:
        if name not in kept[: args.keep]:
            (args.spec_dir / name).unlink()
    print(f"{len(kept)} of {len(after)} specs change plan; kept {min(len(kept), args.keep)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
