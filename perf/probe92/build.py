"""probe92 (session 40): does any padded stream of bf16 LayerNorm → e5m2 2880 reach the 0.88 × copy that
perf/probe90's hand-written persistent kernel did? The sweep spec as the planner builds it, and streamed on
96 and 128 threads (four and three padded tiles) at 2–6 blocks an SM and 2–3 ring slots. Into
kernels/time/kernels (timed only: the padded stream's path passed the GPU matrix and both sanitizers in
perf/probe91's call).

    .venv/bin/python perf/probe92/build.py perf/probe92/kernels
    python3 perf/proto/probe_time.py perf/probe92/kernels/time/kernels OUT.json 2      # on the device"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "perf" / "probe50"))
from build_rules import build  # noqa: E402  (probe50's untuned build in a given tree)
from test_injection import dump  # noqa: E402

SPEC = ROOT / "perf" / "sweep" / "issue_ln_e5m2_token_bf16_2880.toml"


def main(out: Path) -> None:
    specs = out / "specs"
    specs.mkdir(parents=True)
    base = tomllib.loads(SPEC.read_text())
    (specs / SPEC.name).write_text(dump(base))
    for threads in (96, 128):
        for blocks in range(2, 7):
            for slots in (2, 3):
                name = f"ln2880_t{threads}_b{blocks}_r{slots}"
                hints = {"variant": "stream", "threads": threads, "blocks_per_sm": blocks, "ring_slots": slots}
                (specs / f"{name}.toml").write_text(dump(dict(base, name=name, schedule=hints)))
    build(ROOT, specs.resolve(), (out / "time" / "kernels").resolve())


if __name__ == "__main__":
    main(Path(sys.argv[1]))
