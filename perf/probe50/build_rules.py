"""probe50's second call, built on the CPU: every spec of the earlier draws whose plan the two rules of
this probe change (rows sharing warps at 32 bytes a lane, as the call ran it — committed as 16 values a lane,
the same plans for 16-bit rows, float32 ones back to their old plans; no stream of one block an SM),
as NAME_old (built by the tree before them, TREE) and NAME_new (this tree); and the held-out rows whose
scales are column-major in small groups, each beside a twin that writes the same scales row-major
(NAME_rowscales) — whether the scattered scale stores are what holds them under the copy ceiling.

    git worktree add /tmp/oldwt bdd8ae8
    .venv/bin/python perf/probe50/build_rules.py /tmp/oldwt perf/probe50/kernels/rules SPEC...

SPEC: the changed specs' files; the column-scale specs are named below."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from test_injection import dump  # noqa: E402

COLUMN_SCALES = ("perf/probe47/kernels/perf/specs/hunt_4702_046.toml", "perf/probe47/kernels/perf/specs/hunt_4702_047.toml") + tuple(
    f"perf/probe50/kernels/heldout/specs/hunt_5001_{k}.toml" for k in ("015", "029", "030", "035")
)


def renamed(path: Path, suffix: str, **changes) -> tuple[str, str]:
    spec = tomllib.loads(path.read_text())
    spec["name"] = f"{spec['name']}_{suffix}"
    for op in spec["op"]:
        op.update({k: v for k, v in changes.items() if op["kind"] == "quant_fp8"})
    return spec["name"], dump(spec)


def build(tree: Path, specs: Path, out: Path) -> None:
    """`fusegen build` of `tree`, untuned (an empty tuning table), as a user's new spec is built."""
    code = f"import sys; sys.path.insert(0, {str(tree)!r}); from fusegen.cli import main; sys.exit(main())"
    untuned = specs.parent / "no-tuning.json"
    untuned.write_text("{}")
    subprocess.run([sys.executable, "-c", code, "build", str(specs), "--out", str(out), "--tuning", str(untuned)], check=True, cwd=tree)


def build_pairs(specs: list[dict], old_tree: Path, new_tree: Path, kernels: Path) -> None:
    """Each spec built untuned as NAME_old by `old_tree` and as NAME_new by `new_tree`, the packages side by side in
    `kernels` / "time" / "kernels" (perf/proto/probe_time.py's pairs); the renamed specs stay in kernels/specs_*."""
    time_dir = (kernels / "time" / "kernels").resolve()
    time_dir.mkdir(parents=True, exist_ok=True)
    for suffix, tree in (("old", old_tree), ("new", new_tree)):
        specs_dir = kernels / f"specs_{suffix}"
        specs_dir.mkdir(parents=True)
        for spec in specs:
            (specs_dir / f"{spec['name']}_{suffix}.toml").write_text(dump(dict(spec, name=f"{spec['name']}_{suffix}")))
        built = (kernels / f"built_{suffix}").resolve()
        build(tree.resolve(), specs_dir.resolve(), built)
        for package in sorted(built.iterdir()):
            if (package / "plan.json").is_file():
                package.rename(time_dir / package.name)
        shutil.rmtree(built)


def main(old_tree: Path, out: Path, changed: list[Path]) -> None:
    old, new = out / "specs_old", out / "specs_new"
    old.mkdir(parents=True)
    new.mkdir()
    for path in changed:
        for directory, suffix in ((old, "old"), (new, "new")):
            name, text = renamed(path, suffix)
            (directory / f"{name}.toml").write_text(text)
    for path in map(Path, COLUMN_SCALES):
        for suffix, changes in (("columnscales", {}), ("rowscales", {"scale_layout": "row"})):
            name, text = renamed(ROOT / path, suffix, **changes)
            (new / f"{name}.toml").write_text(text)
    build(old_tree, old.resolve(), (out / "built_old").resolve())
    build(ROOT, new.resolve(), (out / "kernels").resolve())
    for package in (out / "built_old").iterdir():  # one package directory for the timing script
        if (package / "plan.json").is_file():
            package.rename(out / "kernels" / package.name)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), [Path(p) for p in sys.argv[3:]])
