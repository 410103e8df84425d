"""probe63: per-head chains with their rows split over blocks at many tokens. perf/probe61's full tune won fp16
QK-norm → cache RoPE 5632 (head 256) 1.31× over the planner with its rows in two parts at 16384 tokens: a
per-head chain has no whole-row reduction to tie the parts, and the planner splits rows only below 64 tokens.
Every per-head chain (a norm over each head) of the sweep, the model library, probe58's and probe59's draws and
probe62's fresh draw, as NAME_old (the planner's program), NAME_new (rows in two parts) and NAME_split4 (four
parts, where they hold whole heads; timed, unpaired), untuned, into kernels/time/kernels; the split builds
also into kernels/check/kernels.

    .venv/bin/python perf/probe63/build.py perf/probe63/kernels
    OUT=... ROUNDS=2 bash perf/probe51/call.sh perf/probe63/kernels     # on the device"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "perf" / "proto"))
from probe_scripts import probe_script  # noqa: E402  (a sibling script)

probe62 = probe_script("probe62")
dump = probe62.scan.probe52.dump


def per_head(base: dict) -> bool:
    return any(op.get("over") == "head" for op in base["op"])


def main(out: Path) -> None:
    bases = probe62.scan.probe60.bases() + probe62.scan.probe60.probe58.drawn(probe62.SEED, probe62.WIDTHS, "held62")
    specs = out / "specs"
    specs.mkdir(parents=True)
    for base in filter(per_head, bases):
        heads = base["hidden"] // base["head_dim"]
        (specs / f"{base['name']}_old.toml").write_text(dump(dict(base, name=f"{base['name']}_old")))
        for parts, suffix in ((2, "new"), (4, "split4")):
            if heads % parts == 0:
                split = dict(base, name=f"{base['name']}_{suffix}", schedule=dict(base.get("schedule", {}), row_split=parts))
                (specs / f"{split['name']}.toml").write_text(dump(split))
    timed = out / "time" / "kernels"
    probe62.scan.probe52.build(ROOT, specs.resolve(), timed.resolve())
    checked = out / "check" / "kernels"
    checked.mkdir(parents=True)
    for package in (*timed.glob("*_new"), *timed.glob("*_split4")):
        shutil.copytree(package, checked / package.name)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
