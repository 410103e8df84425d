"""probe115 (session 56): the vector-padding rule narrowed to layouts that leave every thread vectors no real column
reaches (schedule.VECTOR_PADDING_LIMIT), held out on a fresh seed of the random-spec test's draws.

    .venv/bin/python perf/probe115/build.py OLD_TREE SEED COUNT

plans the first COUNT draws (schedule hints kept, token counts dropped; and all hints dropped) under OLD_TREE (29c1813, before any padding rule) and
under this tree, writes the ones whose routes differ (at most 40 hinted, 12 unhinted, spread evenly) to
perf/probe115/specs and specs_few, and builds each as NAME_old and NAME_new in perf/probe115/kernels (probe114's
pairs, its draw and build helpers)."""

from __future__ import annotations

import importlib.util
import random
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("probe114_build", HERE.parent / "probe114/build.py")
probe114 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(probe114)


def main(old_tree: Path, seed: int, count: int) -> None:
    rng = random.Random(seed)
    # A pinned token count would keep a draw from its sweep count (probe114 could not time six such pairs).
    hinted = [{key: value for key, value in probe114.draws.draw_valid(rng).items() if key != "tokens"} for _ in range(count)]
    unhinted = [{key: value for key, value in spec.items() if key not in ("schedule", "tokens")} for spec in hinted]
    for drawn, most, name, kernels, prefix in (
        (hinted, probe114.MOST_SPECS, "specs", "kernels", f"pin_{seed}"),
        (unhinted, probe114.MOST_FEW, "specs_few", "kernels/few", f"few_{seed}"),
    ):
        indices = probe114.moved(old_tree, drawn)
        print(f"seed {seed}, {name}: {len(indices)} of {count} draws planned otherwise")
        if indices:
            probe114.write(drawn, indices, most, HERE / name, prefix)
            specs = [tomllib.loads(p.read_text()) for p in sorted((HERE / name).glob("*.toml"))]
            probe114.build_pairs(specs, old_tree, probe114.ROOT, HERE / kernels)


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
