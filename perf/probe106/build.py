"""probe106 (session 48): a row that one warp holds alone reduces by its lanes' shuffles, no shared exchange.

A row on one warp of its own ended each reduction in a shared-memory exchange of the warp's partial and a barrier,
though TileLang's warp shuffles had already left each lane with the row's result (README.md).

`specs SEED...` writes, for each fresh unhinted draw (gpu_hunt.py draw N /tmp/hSEED --seed SEED --hinted 0
--widths ... --specs-only) whose many-token program holds each row on one warp and reduces across it, every
thirteenth into perf/probe106/specs/ (call 1); `heldout SEED...` the draws of four or more such rows a block that
call 1 did not time into perf/probe106/heldout/ (call 2). `build OLD_TREE SPEC_DIR` builds SPEC_DIR with the tree
before the change (a git worktree: the build's spawned workers import fusegen from it) as NAME_old and with this
tree as NAME_new into perf/probe106/kernels/time/kernels, the specs also into perf/probe106/kernels/check (the
call copies the new builds beside them). Then, on the device, `OUT=... bash perf/probe106/call.sh` (call 1) or
`call2.sh` (call 2); `pairs.py TIME.json` tabulates the pairs. README.md has the bar, decided before each run."""

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
from fusegen.model import ONE_WARP_ROWS_SHUFFLED  # noqa: E402
from fusegen.plan import plan  # noqa: E402
from fusegen.spec import KernelSpec  # noqa: E402

HERE = Path(__file__).resolve().parent
KEEP_EVERY = 13


def changes(spec: dict) -> bool:
    """Whether the many-token program holds each row on one whole warp and reduces across its lanes (call 1: the
    change for every such program)."""
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


def heldout(seeds: list[str]) -> None:
    """Call 2: the draws of blocks of ONE_WARP_ROWS_SHUFFLED one-warp rows or more that call 1 did not time."""
    out = HERE / "heldout"
    out.mkdir(parents=True, exist_ok=True)
    timed = {path.stem for path in (HERE / "specs").glob("*.toml")}
    written = 0
    for seed in seeds:
        for path in sorted(Path(f"/tmp/h{seed}/specs").glob("*.toml")):
            spec = tomllib.loads(path.read_text())
            if "tokens" in spec or spec["name"] in timed:
                continue
            try:
                if changes(spec) and plan(KernelSpec.model_validate(spec), "x.toml").routes[-1].schedule.block_m >= ONE_WARP_ROWS_SHUFFLED:
                    (out / f"{spec['name']}.toml").write_text(dump(spec))
                    written += 1
            except (ChainError, SpecError, ValueError):
                continue
    print(f"{written} held-out draws written")


def build(old_tree: str, specs_dir: str) -> None:
    timed = HERE / "kernels" / "time" / "kernels"
    checked = HERE / "kernels" / "check"
    for suffix, tree in (("old", Path(old_tree).resolve()), ("new", ROOT)):
        named = HERE / "kernels" / f"specs_{suffix}"
        named.mkdir(parents=True, exist_ok=True)
        for path in sorted(Path(specs_dir).glob("*.toml")):
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
    {"specs": specs, "heldout": heldout}[sys.argv[1]](sys.argv[2:]) if sys.argv[1] != "build" else build(*sys.argv[2:4])
