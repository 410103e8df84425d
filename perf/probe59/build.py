"""probe59: session 31's three rules on a second held-out draw, at widths where they change plans.

Besides probe58's two (schedule.filled_sm; the planner's own thread count for schedule.wide_stream, now only
where it holds at least 16 values a thread), _row_schedule offers every whole number of warps, the row
padded, where the counts it tried leave the row short of 16-byte vectors or of three vectors a thread
(probe58: 16-bit 4352 went to 544 threads × one vector, 0.42–0.60 × copy; 2176 to 8-byte vectors). A scan
of RMSNorm → FP8 and LayerNorm over every multiple of 64 from 1024 to 16384 in bf16 and fp32 found 136 of 964
plans changed; this draw takes 16 of those widths (multiples of 128, for the per-head chain) the committed sweep, probe56 and probe58 did not have
(seed 5901), each spec as NAME_new (all kept) and NAME_old (the tree before the session, where its schedule
differs), and probe58's draw again, old and new where they differ.

    git worktree add /tmp/oldwt a707779
    .venv/bin/python perf/probe59/build.py /tmp/oldwt perf/probe59/kernels"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "perf" / "proto"))
from probe_scripts import probe_script  # noqa: E402  (a sibling script)

probe58 = probe_script("probe58")

SEED = 5901
WIDTHS = (4224, 4480, 4992, 5248, 5888, 6272, 6912, 7680, 8320, 8448, 8704, 9088, 10368, 10880, 12672, 14464)


def main(old_tree: Path, out: Path) -> None:
    held = probe58.drawn(SEED, WIDTHS, "held59")
    probe58.probe52.build_changed(old_tree, out, held + probe58.drawn(), keep_new=frozenset(b["name"] for b in held))
    print(f"{len(held)} drawn")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
