"""probe106 (session 48): a row that one warp holds alone reduces by its lanes' shuffles, no shared exchange.

Rows under 2 KB are planned several a block, each on one warp of its own (schedule.short_rows), and a row's
reductions then ended in a shared-memory exchange of one warp's partial and a barrier that held every row of the
block together: TileLang's warp shuffles had already left each lane with the row's result. With
model.Layout.row_within_a_warp the row's lanes fold by shuffles alone (as rows sharing a warp did), no barrier.

`specs SEED...` writes, for each fresh unhinted draw (gpu_hunt.py draw N /tmp/hSEED --seed SEED --hinted 0
--widths ... --specs-only) whose many-token program holds each row on one warp and reduces across it, the spec into
perf/probe106/specs/ (every thirteenth such draw); `build OLD_TREE` builds them with the tree before the change (a git
worktree: the build's spawned workers import fusegen from it) as NAME_old and with this tree as NAME_new into
perf/probe106/kernels/time/kernels, their specs also into perf/probe106/kernels/check (call.sh copies the new builds beside them). Then

    OUT=... ROUNDS=3 CHECK_S=150 bash perf/probe51/call.sh perf/probe106/kernels       # on the device

Decided before the run: kept if the new programs' geometric mean at the sweep count is at least 1.00 × the old
ones' with none slower by more than 3 %, and every new build matches its reference; README.md says what ran."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from test_injection import dump  # noqa: E402

from fusegen.errors import ChainError, SpecError  # noqa: E402
from fusegen.plan import plan  # noqa: E402
from fusegen.spec import KernelSpec  # noqa: E402

HERE = Path(__file__).resolve().parent
KEEP_EVERY = 13


def changes(spec: dict) -> bool:
    """Whether the many-token program holds each row on one whole warp and reduces across its lanes."""
    route = plan(KernelSpec.model_validate(spec), "x.toml").routes[-1]
    row_threads = route.schedule.threads // route.schedule.block_m
    return row_threads == 32 and any(r.partials for stage in route.stages for r in stage.reductions)


def specs(seeds: list[str]) -> None:
    out = HERE / "specs"
    out.mkdir(parents=True, exist_ok=True)
    found = []
    for seed in seeds:
        for path in sorted(Path(f"/tmp/h{seed}/specs").glob("*.toml")):
            spec = tomllib.loads(path.read_text())
            if "tokens" in spec:
                continue
            try:
                if changes(spec):
                    found.append(spec)
            except (ChainError, SpecError, ValueError):
                continue
    for spec in found[::KEEP_EVERY]:
        (out / f"{spec['name']}.toml").write_text(dump(spec))
    print(f"{len(found)} draws change, {len(found[::KEEP_EVERY])} written")


def build(old_tree: str) -> None:
    timed = HERE / "kernels" / "time" / "kernels"
    checked = HERE / "kernels" / "check"
    for suffix, tree in (("old", Path(old_tree).resolve()), ("new", ROOT)):
        named = HERE / "kernels" / f"specs_{suffix}"
        named.mkdir(parents=True, exist_ok=True)
        for path in sorted((HERE / "specs").glob("*.toml")):
            spec = tomllib.loads(path.read_text())
            (named / f"{spec['name']}_{suffix}.toml").write_text(dump({**spec, "name": f"{spec['name']}_{suffix}"}))
        out = HERE / "kernels" / f"built_{suffix}"
        env = {**os.environ, "PYTHONPATH": str(tree)}
        command = [sys.executable, "-m", "fusegen", "build", str(named), "--out", str(out), "--tuning", str(HERE / "untuned.json")]
        subprocess.run(command, cwd=tree, env=env, check=True)
        for directory in out.iterdir():
            if (directory / "plan.json").is_file():
                shutil.copytree(directory, timed / directory.name, dirs_exist_ok=True)
        if suffix == "new":
            shutil.copytree(named, checked / "specs", dirs_exist_ok=True)
        shutil.rmtree(out)  # the timed copy is the one that travels


if __name__ == "__main__":
    specs(sys.argv[2:]) if sys.argv[1] == "specs" else build(sys.argv[2])
