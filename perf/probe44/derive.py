"""Writes perf/probe44/kernels from perf/probe43/kernels (built by 5b922fe, kernels byte-identical at
76f551c): each spec three times — NAME_frag (probe43's _old: the fragment program), NAME_old (probe43's
_new: variant reread as the planner emits it, the finishing loop `T.serial(tiles)`) and NAME_new (the same
program with that loop `T.unroll(tiles)`, so nvcc sees every tile's load at a constant offset and can
reuse the statistics passes' loads of the same addresses instead of issuing them again).

    python perf/probe44/derive.py
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "perf" / "probe43" / "kernels"
OUT = ROOT / "perf" / "probe44" / "kernels"
SERIAL = "for tile in T.serial(tiles):"


def renamed_copy(package: Path, old_suffix: str, new_suffix: str) -> Path:
    """A copy of a kernel package with every mention of its name moved from one suffix to another."""
    spec = package.name.removesuffix(old_suffix)
    target = OUT / (spec + new_suffix)
    shutil.copytree(package, target)
    for path in sorted(target.iterdir()):
        if path.is_file():
            path.write_text(path.read_text().replace(spec + old_suffix, spec + new_suffix))
            if old_suffix in path.name:
                path.rename(target / path.name.replace(spec + old_suffix, spec + new_suffix))
    return target


def main() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    (OUT / "__init__.py").touch()
    for reread in sorted(SOURCE.glob("*_new")):
        fragment = SOURCE / (reread.name.removesuffix("_new") + "_old")
        renamed_copy(fragment, "_old", "_frag")
        renamed_copy(reread, "_new", "_old")
        unrolled = renamed_copy(reread, "_new", "_new") / "kernel.py"
        text = unrolled.read_text()
        assert text.count(SERIAL) == 1, unrolled
        unrolled.write_text(text.replace(SERIAL, "for tile in T.unroll(tiles):"))
    print(len(list(OUT.glob("*/plan.json"))), "kernel packages")


if __name__ == "__main__":
    main()
