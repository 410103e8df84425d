"""probe78: what quick tune's candidates make of the slow untuned rows session 37 left: the five unhinted specs
of its random draw under 0.90 × copy (perf/probe77's hunt, seed 3701) and three of probe77's rows (heads of 80
in rows of 1280 and 4000, heads of 24 streamed). Each under the QUICK candidates `fusegen tune --quick` would
time (perf/probe73's pinned: tune.candidates ranked by tune.quick_candidates, NAME_c0 the planner's own), built
untuned into kernels/time/kernels; the c0 builds also into kernels/check/kernels.

    .venv/bin/python perf/probe78/build.py perf/probe78/kernels
    OUT=... ROUNDS=2 bash perf/probe51/call.sh perf/probe78/kernels     # on the device"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "perf" / "proto"))
from probe_scripts import probe_script  # noqa: E402  (a sibling script)
from test_injection import dump  # noqa: E402

PROBE77 = ROOT / "perf" / "probe77"
ROWS = {
    "hunt_3701_045": PROBE77 / "kernels/hunt/specs/hunt_3701_045.toml",
    "hunt_3701_035": PROBE77 / "kernels/hunt/specs/hunt_3701_035.toml",
    "hunt_3701_024": PROBE77 / "kernels/hunt/specs/hunt_3701_024.toml",
    "hunt_3701_008": PROBE77 / "kernels/hunt/specs/hunt_3701_008.toml",
    "hunt_3701_013": PROBE77 / "kernels/hunt/specs/hunt_3701_013.toml",
    "rms_head80_bf16": PROBE77 / "specs/rms_head80_bf16.toml",
    "head77_7701_02": PROBE77 / "kernels/specs_new/head77_7701_02_new.toml",
    "head77_7701_12": PROBE77 / "kernels/specs_new/head77_7701_12_new.toml",
}


def build_quick_candidates(out: Path, rows: dict[str, Path]) -> None:
    """Each spec of `rows` (the name it takes → its file), its token count dynamic, under quick tune's
    candidates (NAME_c0 the planner's own), built untuned into out/time/kernels, the c0 builds also into
    out/check/kernels."""
    specs = out / "specs"
    specs.mkdir(parents=True)
    probe73 = probe_script("probe73")
    for name, path in rows.items():
        base = dict(tomllib.loads(path.read_text()), name=name)
        base.pop("tokens", None)
        for spec in probe73.pinned(base):
            (specs / f"{spec['name']}.toml").write_text(dump(spec))
    probe73.build_checked(specs, out, lambda package: package.endswith("_c0"))


if __name__ == "__main__":
    build_quick_candidates(Path(sys.argv[1]), {name.replace("3701", "78").replace("7701", "78"): path for name, path in ROWS.items()})
