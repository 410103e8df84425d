"""probe81: gathering rows of at most 1 KB with 16 values a thread on one warp, which the planner streamed one
row a block and now puts two a block (schedule.short_rows_block_m, perf/probe79–80), old against new, held
out: a fresh draw (seed 8101) of such rows plus the two the unit tests had pinned to one row a block from
session 18's perf/probe21 (bf16 QK-norm → cache RoPE 512, 0.96 against 0.88; bf16 RMSNorm → cache RoPE 512).
NAME_old is built by OLD_TREE, NAME_new by this tree, both untuned, into kernels/time/kernels; the new ones
also into kernels/check/kernels.

    .venv/bin/python perf/probe81/build.py OLD_TREE perf/probe81/kernels
    OUT=... ROUNDS=2 bash perf/probe51/call.sh perf/probe81/kernels      # on the device"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "perf" / "proto"))
from probe_scripts import probe_script  # noqa: E402  (a sibling script)
from test_injection import dump  # noqa: E402

from fusegen.errors import ChainError, SpecError  # noqa: E402
from fusegen.model import DTYPE_BYTES  # noqa: E402
from fusegen.plan import plan  # noqa: E402
from fusegen.schedule import STREAM_MAX_ROW_BYTES, STREAM_MIN_ELEMS_PER_THREAD  # noqa: E402
from fusegen.spec import parse_spec  # noqa: E402

SEED, DRAWN = 8101, 12
WIDTHS = (256, 320, 384, 448, 480, 512)
CACHE_ROPE = {"kind": "rope", "rope_dim": 64, "source": "cache", "max_position": 32768}
HAND = [
    {"name": "qk_norm_bf16_512", "dtype": "bfloat16", "hidden": 512, "head_dim": 128,
     "op": [{"kind": "rmsnorm", "over": "head"}, dict(CACHE_ROPE, rope_dim=128)]},
    {"name": "rms_cache_rope_bf16_512", "dtype": "bfloat16", "hidden": 512, "op": [{"kind": "rmsnorm"}, CACHE_ROPE]},
]  # fmt: skip


def changed(spec: dict) -> bool:
    """A gathering row of at most 1 KB at 16 values a thread that this tree puts two a block."""
    if not any(op["kind"] == "rope" and op.get("source") == "cache" for op in spec["op"]):
        return False
    if spec["hidden"] * DTYPE_BYTES[spec["dtype"]] > STREAM_MAX_ROW_BYTES:
        return False
    try:
        schedule = plan(parse_spec(dump(spec), spec["name"]), spec["name"]).routes[-1].schedule
    except (ChainError, SpecError):
        return False
    return schedule.block_m == 2 and schedule.elems_per_thread >= STREAM_MIN_ELEMS_PER_THREAD


def main(old_tree: Path, out: Path) -> None:
    old, new = out / "specs_old", out / "specs_new"
    old.mkdir(parents=True)
    new.mkdir()
    bases = HAND + probe_script("probe51").drawn_specs(SEED, DRAWN, changed, WIDTHS, "held81")
    for base in bases:
        for directory, suffix in ((old, "old"), (new, "new")):
            (directory / f"{base['name']}_{suffix}.toml").write_text(dump(dict(base, name=f"{base['name']}_{suffix}")))
    build = probe_script("probe50", "build_rules").build
    timed = (out / "time" / "kernels").resolve()
    build(old_tree.resolve(), old.resolve(), (out / "built_old").resolve())
    build(ROOT, new.resolve(), timed)
    checked = out / "check" / "kernels"
    checked.mkdir(parents=True)
    for package in sorted(timed.iterdir()):
        if package.name.endswith("_new"):
            shutil.copytree(package, checked / package.name)
    for package in (out / "built_old").iterdir():
        if (package / "plan.json").is_file():
            package.rename(timed / package.name)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
