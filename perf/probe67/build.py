"""probe67: staged per-token rows loaded on whole passes of a row's threads (plan.whole_thread_extent) against
the loops over fewer entries than threads that ran under a branch, whose loads ptxas issued only after the
row had arrived. Every spec whose kernel source the change touches, as NAME_old (`old_tree`) and NAME_new
(this tree), both untuned, into kernels/time/kernels (perf/proto/probe_time.py times them and compares their
outputs bit for bit: the change moves no arithmetic), the _new ones also into kernels/check/kernels.

    git worktree add /tmp/oldwt d1a5951
    .venv/bin/python perf/probe67/build.py /tmp/oldwt perf/probe67/kernels

Specs: the sweep, the model library, probe63's per-head chains, probe64's float32 draw, and a fresh draw of
chains with a RoPE (seed 6701), none of which the change was fitted to."""

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

SEED, DRAWN = 6701, 40


def has_staged_row(spec: dict) -> bool:
    return any(op["kind"] == "rope" for op in spec["op"])


def probe_build(probe: str):
    """perf/PROBE/build.py as a module of its own name (every probe's script is build.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"{probe}_build", ROOT / "perf" / probe / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bases() -> list[dict]:
    found = [tomllib.loads(p.read_text()) for d in ("perf/sweep", "specs/models") for p in sorted((ROOT / d).glob("*.toml"))]
    for path in sorted((ROOT / "perf/probe63/kernels/specs").glob("held*_old.toml")):
        spec = tomllib.loads(path.read_text())
        found.append(dict(spec, name=spec["name"].removesuffix("_old")))
    found += probe_build("probe64").drawn(keep=lambda spec: True)
    return found + probe_build("probe51").drawn_specs(SEED, DRAWN, has_staged_row, prefix="held67")


def source(package: Path) -> str:
    """The kernel's CUDA past its two header lines (the spec's path, the identity), named NAME."""
    return "".join((package / "kernel.cu").read_text().splitlines(keepends=True)[2:]).replace(package.name, "NAME")


def main(old_tree: Path, out: Path) -> None:
    old, new = out / "specs_old", out / "specs_new"
    old.mkdir(parents=True)
    new.mkdir()
    for base in bases():
        for directory, suffix in ((old, "old"), (new, "new")):
            (directory / f"{base['name']}_{suffix}.toml").write_text(dump(dict(base, name=f"{base['name']}_{suffix}")))
    timed = out / "time" / "kernels"
    build(ROOT, new.resolve(), timed.resolve())
    build(old_tree, old.resolve(), (out / "built_old").resolve())
    checked = out / "check" / "kernels"
    checked.mkdir(parents=True)
    for package in sorted((out / "built_old").iterdir()):
        if not (package / "plan.json").is_file():
            continue
        twin = timed / package.name.replace("_old", "_new")
        if source(package) == source(twin):
            shutil.rmtree(twin)
            continue
        package.rename(timed / package.name)
        shutil.copytree(twin, checked / twin.name)
    shutil.rmtree(out / "built_old")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
