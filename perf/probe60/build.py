"""probe60: the ue8m0 reciprocal by one subtraction (quant_fp8.POWER_OF_TWO_RECIPROCAL) timed against the
tree before it on every spec whose CUDA it changes: the committed sweep (perf/sweep), probe58's and
probe59's held-out draws and the model library, each as NAME_old (the tree before) and NAME_new (this
tree), untuned, into kernels/time/kernels (perf/proto/probe_time.py times them and compares their outputs
bit for bit), the _new ones also into kernels/check/kernels (scripts/gpu_hunt.py check). The call timed the
working tree that also widened bfloat16 through 32-bit words (not kept: README.md); the change touches no
plan, so the pairs differ in code only.

    git worktree add /tmp/oldwt c4273d7
    .venv/bin/python perf/probe60/build.py /tmp/oldwt perf/probe60/kernels"""

from __future__ import annotations

import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


sys.path.insert(0, str(ROOT / "perf" / "proto"))
from probe_scripts import probe_script  # noqa: E402  (a sibling script)

probe58 = probe_script("probe58")


def bases() -> list[dict]:
    probe59 = probe_script("probe59")
    files = sorted((ROOT / "perf" / "sweep").glob("*.toml")) + sorted((ROOT / "specs" / "models").glob("*.toml"))
    return [tomllib.loads(p.read_text()) for p in files] + probe58.drawn() + probe58.drawn(probe59.SEED, probe59.WIDTHS, "held59")


def main(old_tree: Path, out: Path) -> None:
    probe52 = probe_script("probe52")
    old, new = out / "specs_old", out / "specs_new"
    old.mkdir(parents=True)
    new.mkdir()
    for base in bases():
        for directory, suffix in ((old, "old"), (new, "new")):
            (directory / f"{base['name']}_{suffix}.toml").write_text(probe52.dump(dict(base, name=f"{base['name']}_{suffix}")))
    timed = out / "time" / "kernels"
    probe52.build(ROOT, new.resolve(), timed.resolve())
    probe52.build(old_tree, old.resolve(), (out / "built_old").resolve())
    checked = out / "check" / "kernels"
    checked.mkdir(parents=True)
    kept = 0
    for package in sorted((out / "built_old").iterdir()):
        if not (package / "kernel.cu").is_file():
            continue
        twin = timed / package.name.replace("_old", "_new")
        # past the header naming the spec file and identity, the kernel named alike
        cuda = [(p / "kernel.cu").read_text().split("\n", 2)[2].replace(p.name, "K") for p in (package, twin)]
        if cuda[0] == cuda[1]:
            shutil.rmtree(twin)
            continue
        kept += 1
        package.rename(timed / package.name)
        shutil.copytree(twin, checked / twin.name)
    print(f"{kept} pairs differ")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
