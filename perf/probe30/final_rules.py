"""Where the final gathering-row rules (361f2f9) stand on perf/probe28's and probe30's held-out specs, from
the timings already taken: each spec whose plan cc7503a or 3f4bcbf changed is planned again by the working
tree; its plan is the one timed as `_old` (the planner before the rules, ac3bc56) or as `_new`, and takes
that timing. Needs both probes' kernels built (perf/probe28/README.md, this README) for their plan.json.

    python perf/probe30/final_rules.py
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "perf" / "probe28"))
import census  # noqa: E402

from fusegen.build import load_and_plan  # noqa: E402

# Not part of the program a plan compiles to: the reasons, an estimate stated in them, a field plan.json leaves out.
IGNORED = ("reasons", "register_estimate", "row_split")


def schedules(routes: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in IGNORED} for r in routes]


def timings(log: Path) -> dict[str, float]:
    return {line.split()[0]: float(line.split()[-3]) for line in log.read_text().splitlines() if "x copy" in line}


def main() -> int:
    rows = []
    for probe, seed, count in (("probe28", 28, 60), ("probe30", 30, 70)):
        kernels, x = ROOT / "perf" / probe / "kernels", timings(ROOT / "perf" / probe / "results" / f"{probe}.log")
        with tempfile.TemporaryDirectory() as scratch:
            for name, spec in census.generate(seed, count).items():
                if not (kernels / f"{name}_new").is_dir():
                    continue  # the rules left its plan as it was
                path = Path(scratch) / f"{name}.toml"
                path.write_text(census.sweep_specs.to_toml(spec, seed))
                (plan,) = load_and_plan([path])
                final = schedules([asdict(r.schedule) for r in plan.routes])
                timed = {
                    side: schedules([r["schedule"] for r in json.loads((kernels / f"{name}_{side}" / "plan.json").read_text())["routes"]])
                    for side in ("old", "new")
                }
                side = next((s for s in ("old", "new") if timed[s] == final), None)
                if side is None:
                    print(f"{probe} {name}: planned as neither timed program", file=sys.stderr)
                    return 1
                rows.append((probe, name, side, x[f"{name}_old"], x[f"{name}_{side}"]))
    ratio = [after / before for *_, before, after in rows]
    print(
        f"{len(rows)} specs: {sum(r[2] == 'old' for r in rows)} planned as before the rules, {sum(r[2] == 'new' for r in rows)} as timed after"
    )
    print(
        f"geometric mean {math.exp(sum(map(math.log, ratio)) / len(ratio)):.3f}; faster by > 2 %: {sum(r > 1.02 for r in ratio)}; slower by > 2 %: {sum(r < 0.98 for r in ratio)}"
    )
    print(f"under 0.90 × copy: {sum(r[3] < 0.9 for r in rows)} before, {sum(r[4] < 0.9 for r in rows)} after")
    for probe, name, side, before, after in sorted(rows, key=lambda r: r[4] / r[3]):
        print(f"{probe} {name:34s} {side} {before:.3f} -> {after:.3f} {100 * (after / before - 1):+.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
