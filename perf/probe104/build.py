"""probe104 (session 45): rows of one warp's 16-byte vectors (512 bytes: 16-bit 256 columns, float32 128) sharing
warps on the many-token route (schedule.SHARED_ROWS_MAX_BYTES) against whole warps, one vector a lane.

perf/probe103's fresh draw ran such rows that read much and write little at 0.77–0.85 × copy (bf16 RMSNorm writing
only rstd 0.77, fp16 LayerNorm → FP8 0.81): a warp of its own keeps one 16-byte load a lane in flight, and a
row that writes little needs its reads in flight. Sharing, a row takes 16 lanes holding two vectors each.

`specs SEED...` writes, for each fresh unhinted draw (gpu_hunt.py draw N /tmp/hSEED --seed SEED --hinted 0
--widths 128,256 --specs-only) whose many-token program the rule changes, NAME_old and NAME_new into
perf/probe104/specs_old/ and specs_new/; `build` builds specs_old with the rule off (SHARED_ROWS_MAX_BYTES one
below a warp's vectors: the planner before it) and specs_new with it into perf/probe104/kernels/time/kernels, and
the new ones also into perf/probe104/kernels/check/kernels with their specs (scripts/gpu_hunt.py check). Then

    OUT=... ROUNDS=3 CHECK_S=150 bash perf/probe51/call.sh perf/probe104/kernels       # on the device

(The session wrote every eighth of the 457 pairs seeds 4511–4513 gave, 58, and perf/probe103's five rows, 4501.)
Decided before the run: the rule is kept if the new programs' geometric mean at the sweep count is at least
1.03 × the old ones' with none slower by more than 3 %, every new build matching its reference. It missed that
for every chain and met it held out for the chains that quantise to FP8: README.md."""

from __future__ import annotations

import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from test_injection import dump  # noqa: E402

from fusegen import schedule  # noqa: E402
from fusegen.cli import main as fusegen_main  # noqa: E402
from fusegen.errors import ChainError, SpecError  # noqa: E402
from fusegen.plan import plan  # noqa: E402
from fusegen.spec import KernelSpec  # noqa: E402

HERE = Path(__file__).resolve().parent
RULE = schedule.SHARED_ROWS_MAX_BYTES
BEFORE = RULE - 1


def many_token_program(spec: dict, limit: int):
    schedule.SHARED_ROWS_MAX_BYTES = limit
    try:
        s = plan(KernelSpec.model_validate(spec), "x.toml").routes[-1].schedule
        return (s.variant, s.threads, s.block_m, s.vector_bytes, s.padded_hidden)
    finally:
        schedule.SHARED_ROWS_MAX_BYTES = RULE


def specs(seeds: list[str]) -> None:
    for suffix in ("old", "new"):
        (HERE / f"specs_{suffix}").mkdir(parents=True, exist_ok=True)
    written = 0
    for seed in seeds:
        for path in sorted(Path(f"/tmp/h{seed}/specs").glob("*.toml")):
            spec = tomllib.loads(path.read_text())
            if "tokens" in spec or spec.get("schedule"):
                continue
            try:
                old, new = many_token_program(spec, BEFORE), many_token_program(spec, RULE)
            except (ChainError, SpecError, ValueError):
                continue
            if old == new:
                continue
            for suffix in ("old", "new"):
                (HERE / f"specs_{suffix}" / f"{spec['name']}_{suffix}.toml").write_text(dump({**spec, "name": f"{spec['name']}_{suffix}"}))
            written += 1
            print(f"{spec['name']}: {old} → {new}")
    print(f"{written} pairs")


def build(tuning: str) -> None:
    timed = HERE / "kernels" / "time" / "kernels"
    checked = HERE / "kernels" / "check"
    for suffix, limit in (("old", BEFORE), ("new", RULE)):
        schedule.SHARED_ROWS_MAX_BYTES = limit
        out = HERE / "kernels" / f"built_{suffix}"
        assert fusegen_main(["build", str(HERE / f"specs_{suffix}"), "--out", str(out), "--tuning", tuning]) == 0
        for directory in out.iterdir():
            if (directory / "plan.json").is_file():
                shutil.copytree(directory, timed / directory.name, dirs_exist_ok=True)
                if suffix == "new":
                    shutil.copytree(directory, checked / "kernels" / directory.name, dirs_exist_ok=True)
    shutil.copytree(HERE / "specs_new", checked / "specs", dirs_exist_ok=True)
    schedule.SHARED_ROWS_MAX_BYTES = RULE


if __name__ == "__main__":
    specs(sys.argv[2:]) if sys.argv[1] == "specs" else build(sys.argv[2])
