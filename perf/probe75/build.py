"""probe75: the launch bounds from ptxas's registers (build.stage, schedule.ptxas_bound_trials) on the GPU
before they land: a random draw built as `fusegen build` builds it (scripts/gpu_hunt.py draw 48 kernels --seed
7501, 14 of 48 take a bound), checked against the references at every route's counts; and the model library
timed as the tree before the rule builds it (NAME_old) against this one (NAME_new), at its sweep counts
(or the specs named after the output directory: the sweep's rows the rule bounds).

    .venv/bin/python scripts/gpu_hunt.py draw 48 perf/probe75/kernels --seed 7501 --widths 2048,3072,4096,5120,6144,7168,8192,10240,12288
    git worktree add /tmp/oldwt 7b68381
    .venv/bin/python perf/probe75/build.py /tmp/oldwt perf/probe75/kernels/models
    .venv/bin/python perf/probe75/build.py /tmp/oldwt perf/probe75/kernels/sweep SWEEP_SPEC...   # the sweep's bounded rows
    python3 scripts/gpu_hunt.py check perf/probe75/kernels                        # on the device
    python3 perf/proto/probe_time.py perf/probe75/kernels/models/time/kernels OUT.json 2   # on the device"""

from __future__ import annotations

import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for sibling in ("tests", "perf/probe50"):
    sys.path.insert(0, str(ROOT / sibling))
from build_rules import build  # noqa: E402  (an untuned build of a tree)
from test_injection import dump  # noqa: E402


def main(old_tree: Path, out: Path, paths: list[Path]) -> None:
    timed = (out / "time" / "kernels").resolve()
    for tree, suffix in ((old_tree, "old"), (ROOT, "new")):
        specs = out / f"specs_{suffix}"
        specs.mkdir(parents=True)
        for path in paths:
            spec = tomllib.loads(path.read_text())
            spec["name"] = f"{spec['name']}_{suffix}"
            (specs / f"{spec['name']}.toml").write_text(dump(spec))
        if suffix == "old":  # the package the timing script imports from
            build(tree, specs.resolve(), timed)
            continue
        built = (out / "built_new").resolve()
        build(tree, specs.resolve(), built)
        for package in built.iterdir():
            if (package / "plan.json").is_file():
                package.rename(timed / package.name)
        shutil.rmtree(built)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), [Path(p) for p in sys.argv[3:]] or sorted((ROOT / "specs" / "models").glob("*.toml")))
