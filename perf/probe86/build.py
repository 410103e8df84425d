"""probe86 (built in session 39, for the next device session): two held-out questions.

- reread: the lowered spilling bounds (schedule.PTXAS_SPILL_RELAX_BYTES) cover reread programs too, but
  perf/probe85's 13 held-out programs were all fragment ones, and reread programs the rule lowers are rare: of
  45 drawn reread programs bounded at two blocks or more (seeds 8601–8603) the build lowered none. The one found,
  perf/probe84's draw hunt_3901_046 (bf16 RMSNorm → cache RoPE → FP8 g64 column 24576, 40 bytes under four
  blocks of 384 threads, 0.31 × copy), and the draw's other lowered program, 051, as NAME_old (OLD_TREE, the
  spilling bound) and NAME_new, into kernels/reread.
- stats: rows that write only per-token statistics, of 1–2 KB (the planner streams rows of at most 1 KB;
  perf/probe82 and probe84 found three such 2 KB rows faster streamed, six of 3–8 KB slower): fresh draws
  (seed 8604) as NAME_p (the planner's fragment program) and NAME_s (variant stream), into kernels/stats.

    git worktree add /tmp/old86 c232e92                                        # the tree before the rule
    .venv/bin/python perf/probe86/build.py /tmp/old86 perf/probe86/kernels
    OUT=... bash perf/probe86/call.sh                                          # on the device"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "perf" / "proto"))
sys.path.insert(0, str(ROOT / "perf" / "probe50"))
from build_rules import build  # noqa: E402  (probe50's untuned build in a given tree)
from probe_scripts import probe_script  # noqa: E402  (a sibling script)
from test_injection import dump  # noqa: E402

from fusegen.model import DTYPE_BYTES  # noqa: E402

DRAW = ROOT / "perf" / "probe84" / "kernels" / "draw" / "specs"  # scripts/gpu_hunt.py draw 64 … --seed 3901
LOWERED_DRAWN = ("hunt_3901_046", "hunt_3901_051")
STATS_SEED, STATS_DRAWN = 8604, 12
STATS_WIDTHS = (288, 320, 384, 448, 512, 544, 576, 640, 768, 896, 1000, 1024)

probe84 = probe_script("probe84")


def statistics_of_two_kilobytes(spec: dict) -> bool:
    return 1024 < spec["hidden"] * DTYPE_BYTES[spec["dtype"]] <= 2048 and probe84.writes_only_statistics(spec)


def main(old_tree: Path, out: Path) -> None:
    reread = out / "reread"
    for suffix, tree in (("old", old_tree), ("new", ROOT)):
        specs = reread / f"specs_{suffix}"
        specs.mkdir(parents=True)
        for name in LOWERED_DRAWN:
            text = (DRAW / f"{name}.toml").read_text()
            (specs / f"{name}_{suffix}.toml").write_text(text.replace(f'name = "{name}"', f'name = "{name}_{suffix}"', 1))
        build(tree, specs.resolve(), (reread / f"built_{suffix}").resolve())
    timed, checked = reread / "time" / "kernels", reread / "check" / "kernels"
    for suffix in ("old", "new"):
        for package in sorted(p for p in (reread / f"built_{suffix}").iterdir() if (p / "plan.json").is_file()):
            shutil.copytree(package, timed / package.name)
            if suffix == "new":
                shutil.copytree(package, checked / package.name)
    stats = out / "stats"
    specs = stats / "specs"
    specs.mkdir(parents=True)
    for base in probe_script("probe51").drawn_specs(STATS_SEED, STATS_DRAWN, statistics_of_two_kilobytes, STATS_WIDTHS, "stats86"):
        streamed = dict(base, name=f"{base['name']}_s", schedule=dict(base.get("schedule", {}), variant="stream"))
        for spec in (dict(base, name=f"{base['name']}_p"), streamed):
            if probe84.planned_route(spec) is not None:
                (specs / f"{spec['name']}.toml").write_text(dump(spec))
    probe_script("probe73").build_checked(specs, stats, lambda package: package.endswith("_s"))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
