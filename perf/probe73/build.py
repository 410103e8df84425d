"""probe73: what wins on the held-out rows still under 0.90 × copy. perf/probe70's new builds (the planner of
ce59540, unchanged since) left ten of 34 cache-RoPE rows under 0.90 at their sweep counts, 0.64–0.89; quick
tune's candidates for each (tune.candidates ranked by tune.quick_candidates, QUICK of them, the planner's own
first) are built here untuned with their hints pinned, NAME_cK, into kernels/time/kernels for
perf/proto/probe_time.py. A fresh draw (seed 7301, DRAWN specs of every chain kind, untuned, NAME_c0 only)
joins them: where the planner stands on chains probe70's draw (cache RoPE only) left out; those are also
checked against their references (kernels/check/kernels, scripts/gpu_hunt.py check) — the candidates are
what `fusegen tune` would time, and the device's compile time goes to timing them.

    .venv/bin/python perf/probe73/build.py perf/probe73/kernels
    OUT=... ROUNDS=2 bash perf/probe51/call.sh perf/probe73/kernels     # on the device"""

from __future__ import annotations

import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for sibling in ("tests", "scripts", "perf/probe50"):
    sys.path.insert(0, str(ROOT / sibling))
from build_rules import build  # noqa: E402  (an untuned build of a tree)
from test_injection import dump  # noqa: E402

sys.path.insert(0, str(ROOT / "perf" / "proto"))
from probe_scripts import probe_script  # noqa: E402  (a sibling script)

from fusegen.errors import ChainError, SpecError  # noqa: E402
from fusegen.plan import plan  # noqa: E402
from fusegen.spec import parse_spec  # noqa: E402
from fusegen.tune import candidates, quick_candidates  # noqa: E402

QUICK = 8
# probe70's rows under 0.90 × copy (H200, session 35), worst first
UNDER = (
    "held70_7001_109",
    "held70_7001_235",
    "held70_7001_261",
    "fit70_06",
    "fit70_08",
    "held70_7001_41",
    "fit70_07",
    "held70_7001_175",
    "held70_7001_260",
    "held70_7001_157",
)
SEED, DRAWN = 7301, 16
WIDTHS = (512, 1024, 1536, 2048, 2560, 2880, 3072, 3584, 4096, 5120, 6144, 7168, 8192, 10240, 12288, 14336, 16384)


def accepted(spec: dict) -> bool:
    try:
        plan(parse_spec(dump(spec), spec["name"]), spec["name"])
    except (ChainError, SpecError):
        return False
    return True


def pinned(base: dict) -> list[dict]:
    """`base` under each of its quick candidates' hints, the planner's own first (its hints left auto)."""
    text = dump(base)
    found = quick_candidates(candidates(parse_spec(text, base["name"])), QUICK)
    specs = [dict(base, name=f"{base['name']}_c0")]
    for k, candidate in enumerate(found[1:], start=1):
        spec = dict(base, name=f"{base['name']}_c{k}", schedule=dict(base.get("schedule", {}), **candidate.hints))
        got = plan(parse_spec(dump(spec), spec["name"]), spec["name"]).schedule
        if got.variant == candidate.plan.schedule.variant and got.threads == candidate.plan.schedule.threads:
            specs.append(spec)
    return specs


def main(out: Path) -> None:
    specs = out / "specs"
    specs.mkdir(parents=True)
    probe70 = ROOT / "perf/probe70/kernels/specs_new"
    for name in UNDER:
        base = tomllib.loads((probe70 / f"{name}_new.toml").read_text())
        base["name"] = name.replace("70", "73", 1)
        for spec in pinned(base):
            (specs / f"{spec['name']}.toml").write_text(dump(spec))
    for base in probe_script("probe51").drawn_specs(SEED, DRAWN, accepted, WIDTHS, "held73"):
        (specs / f"{base['name']}_c0.toml").write_text(dump(dict(base, name=f"{base['name']}_c0")))
    build_checked(specs, out, lambda name: name.startswith("held73_7301"))


def build_checked(specs: Path, out: Path, checked) -> None:
    """Builds `specs` untuned into out/time/kernels, copying the packages whose name `checked` takes into
    out/check/kernels (scripts/gpu_hunt.py check)."""
    timed = out / "time" / "kernels"
    build(ROOT, specs.resolve(), timed.resolve())
    into = out / "check" / "kernels"
    into.mkdir(parents=True)
    for package in sorted(p for p in timed.iterdir() if (p / "plan.json").is_file()):
        if checked(package.name):
            shutil.copytree(package, into / package.name)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
