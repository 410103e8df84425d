"""probe56: the planner's own schedules on a held-out sweep — scripts/sweep_specs.py's chains and dtypes at
widths the committed sweep (perf/sweep, seed 16) never had, drawn with another seed, untuned — timed at
their sweep counts (perf/proto/probe_time.py). Model widths that are not in the sweep: Qwen2-0.5B 896,
1280, 1792, Gemma 2 2B 2304, 3200, Gemma 2 27B 4608, Gemma 3 27B 5376, 6656, Qwen2.5-1.5B's MLP 8960, 9216,
10240, Llama 2's MLP 11008, 13824, Llama 3's MLP 14336, 18432 (multiples of 64, so every head size of the
per-head chain fits one of them).

    .venv/bin/python perf/probe56/build.py perf/probe56/kernels"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "perf" / "probe50"))
from build_rules import build  # noqa: E402  (the untuned build)

SEED = 5601
WIDTHS = (896, 1280, 1792, 2304, 3200, 4608, 5376, 6656, 8960, 9216, 10240, 11008, 13824, 14336, 18432)


def drawn(seed: int = SEED, widths: tuple[int, ...] = WIDTHS, prefix: str = "held") -> dict[str, str]:
    """scripts/sweep_specs.py's specs of `seed` at `widths` as TOML text, by name (`prefix`_…)."""
    loaded = importlib.util.spec_from_file_location("sweep_specs", ROOT / "scripts" / "sweep_specs.py")
    sweep = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(sweep)
    sweep.WIDTHS, sweep.ISSUE_SHAPES = widths, {}  # the generator's coverage check reads both
    named = ((name.replace("sweep_", f"{prefix}_", 1), spec) for name, spec in sweep.generate(seed).items())
    return {held: sweep.to_toml({**spec, "name": held}, seed) for held, spec in named}


def main(out: Path) -> None:
    specs = out / "specs"
    specs.mkdir(parents=True)
    for name, text in drawn().items():
        (specs / f"{name}.toml").write_text(text)
    build(ROOT, specs.resolve(), (out / "time" / "kernels").resolve())


if __name__ == "__main__":
    main(Path(sys.argv[1]))
