"""probe121 (session 61): the streams the build keeps, against the fragment program on the stream's own threads.

wide_stream replaces a wide row's fragment program by a stream; the build compiles the fragment program variant
"fragment" plans (the planner's threads) and keeps it where ptxas holds more than four blocks of it an SM
(schedule.fragment_over_stream_blocks). On fewer threads each holding more of the row, ptxas may hold more rows an
SM: perf/probe109's fp16 LayerNorm → per-token FP8 6144 streams (the planner's 256-thread fragment program holds
four blocks at 64 registers), while the same program on the stream's 128 threads, bounded at six blocks (80
registers), ran 0.977 against the stream's 0.840 × copy on an H100 (session 61) and 0.948 against 0.833 on the H200
(session 53). Held out here on unhinted draws of the random-spec test (hints and token counts dropped, as a user's
new spec):

    .venv/bin/python perf/probe121/build.py SEED COUNT

plans the first COUNT draws, builds untuned those the planner streams as wide_stream does, and for each the build
keeps as a stream writes NAME_old (the spec as drawn: the stream) and NAME_new (variant "fragment" on the stream's
threads, one row a block, the build's launch-bound trials as for any spec) into perf/probe121/kernels/time/kernels
(perf/proto/probe_time.py's pairs), beside probe109's row; perf/probe121/blocks.txt lists each pair's fragment
registers and blocks an SM as compiled."""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "perf/probe121"
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
import test_random_specs as draws  # noqa: E402
from test_injection import dump  # noqa: E402

from fusegen.plan import plan  # noqa: E402
from fusegen.schedule import WIDE_STREAM_MAX_FRAGMENT_BLOCKS, resident_blocks, wide_streamed  # noqa: E402
from fusegen.spec import KernelSpec  # noqa: E402

ALSO = ROOT / "perf/probe109/kernels/specs/p109_layernorm_token_e4m3fn_float16_6144.toml"
MOST = 40


def build(specs: Path, out: Path) -> str:
    """`fusegen build` of this tree, untuned, as a user's new spec is built; its output."""
    untuned = specs.parent / "no-tuning.json"
    untuned.write_text("{}")
    command = [sys.executable, "-m", "fusegen", "build", str(specs), "--out", str(out), "--tuning", str(untuned)]
    return subprocess.run(command, check=True, cwd=ROOT, capture_output=True, text=True).stdout


def streamed(seed: int, count: int) -> list[dict]:
    """The unhinted draws among the first `count` of `seed` that the planner streams as wide_stream does."""
    rng = random.Random(seed)
    found = []
    for i in range(count):
        spec = {k: v for k, v in draws.draw_valid(rng).items() if k not in ("schedule", "tokens")}
        try:
            kernel = KernelSpec.model_validate(spec)
            planned = plan(kernel, "x.toml")
        except Exception:  # a draw the planner refuses is no pair
            continue
        if wide_streamed(kernel, planned.schedule):
            found.append(dict(spec, name=f"ws_{seed}_{i:04d}"))
    return found


def primary(package: Path) -> dict:
    return json.loads((package / "plan.json").read_text())["routes"][-1]["schedule"]


def main(seed: int, count: int) -> None:
    work = HERE / "work"
    shutil.rmtree(work, ignore_errors=True)
    (work / "drawn").mkdir(parents=True)
    specs = streamed(seed, count) + [tomllib.loads(ALSO.read_text())]
    for spec in specs:
        (work / "drawn" / f"{spec['name']}.toml").write_text(dump(spec))
    build(work / "drawn", work / "built")
    kept = [(spec, primary(work / "built" / spec["name"])) for spec in specs]
    kept = [(spec, schedule) for spec, schedule in kept if schedule["variant"] == "stream"]
    print(f"seed {seed}: {len(specs) - 1} of {count} draws streamed by the planner, {len(kept)} kept as streams by the build")
    kept = kept[:: max(1, len(kept) // MOST)][:MOST]
    (HERE / "specs").mkdir(exist_ok=True)
    pairs = work / "pairs"
    pairs.mkdir()
    for spec, schedule in kept:
        (HERE / "specs" / f"{spec['name']}.toml").write_text(dump(spec))
        (pairs / f"{spec['name']}_old.toml").write_text(dump(dict(spec, name=f"{spec['name']}_old")))
        hints = {"variant": "fragment", "threads": schedule["threads"], "block_m": 1}
        (pairs / f"{spec['name']}_new.toml").write_text(dump(dict(spec, name=f"{spec['name']}_new", schedule=hints)))
    log = build(pairs, work / "pairs_built")
    time_dir = HERE / "kernels/time/kernels"
    shutil.rmtree(HERE / "kernels", ignore_errors=True)
    time_dir.mkdir(parents=True)
    lines = []
    for spec, schedule in kept:
        new = f"{spec['name']}_new"
        registers = int(re.search(rf"^{new}\s+fragment\s+\d+ thr × \d+ B\s+(\d+) reg", log, re.M).group(1))
        bound = primary(work / "pairs_built" / new)["blocks_per_sm"] or 1
        blocks = max(bound, resident_blocks(registers, schedule["threads"]))
        ops = " → ".join(op["kind"] for op in spec["op"])
        lines.append(
            f"{spec['name']:<44} {spec['dtype']:<9} {spec['hidden']:>6} {ops:<48} stream {schedule['threads']:>3} threads; "
            f"fragment {registers:>3} registers, {blocks} blocks an SM{' (over the threshold)' if blocks > WIDE_STREAM_MAX_FRAGMENT_BLOCKS else ''}"
        )
        for suffix in ("old", "new"):
            (work / "pairs_built" / f"{spec['name']}_{suffix}").rename(time_dir / f"{spec['name']}_{suffix}")
    (HERE / "blocks.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    shutil.rmtree(work)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
