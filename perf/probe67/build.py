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
sys.path.insert(0, str(ROOT / "perf" / "proto"))
from probe_scripts import probe_script  # noqa: E402  (a sibling script)

SEED, DRAWN = 6701, 40


def has_staged_row(spec: dict) -> bool:
    return any(op["kind"] == "rope" for op in spec["op"])


def bases() -> list[dict]:
    found = [tomllib.loads(p.read_text()) for d in ("perf/sweep", "specs/models") for p in sorted((ROOT / d).glob("*.toml"))]
    probe63, probe62 = probe_script("probe63"), probe_script("probe62")
    drawn = probe62.scan.probe60.bases() + probe62.scan.probe60.probe58.drawn(probe62.SEED, probe62.WIDTHS, "held62")
    found += [b for b in drawn if probe63.per_head(b) and b["name"].startswith("held")]  # probe63's held-out rows
    found += probe_script("probe64").drawn(keep=lambda spec: True)
    return found + probe_script("probe51").drawn_specs(SEED, DRAWN, has_staged_row, prefix="held67")


def sources_differ(old: Path, new: Path) -> bool:
    """Whether two built packages' CUDA differs past its two header lines (the spec's path, the identity)."""

    def source(package: Path) -> str:
        return "".join((package / "kernel.cu").read_text().splitlines(keepends=True)[2:]).replace(package.name, "NAME")

    return source(old) != source(new)


def main(old_tree: Path, out: Path) -> None:
    probe_script("probe52").build_changed(old_tree, out, bases(), differs=sources_differ)
    shutil.rmtree(out / "built_old")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
