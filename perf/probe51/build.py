"""probe51 (prepared in session 28, not yet run): do column-major scales in small groups run faster when a
block holds several rows? perf/probe50 measured six held-out rows at 0.32–0.67 × copy with column-major
scales and 0.87–1.01 with the same scales row-major: each row stores its scales one group at a time, M
scales apart, so each store is a partial write of its own sector. With block_m rows a block (each on whole
warps of its own: the threads hint is block_m × the planner's threads) the rows whose scales share a sector
are written from one SM within one block's lifetime.

    .venv/bin/python perf/probe51/build.py perf/probe51/kernels     (then time kernels/ with probe_time.py)

Each spec as planned (`_planned`), at block_m 2, 4, 8 where the threads fit (`_bm2`, …), and with row-major
scales (`_rowscales`, the ceiling of what the layout costs)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "perf" / "probe50"))
from build_rules import COLUMN_SCALES  # noqa: E402  (probe50's six rows)
from test_injection import dump  # noqa: E402
from variants import sweep_schedule  # noqa: E402

from fusegen.plan import plan  # noqa: E402
from fusegen.spec import parse_spec  # noqa: E402


def main(out: Path) -> None:
    specs = out / "specs"
    specs.mkdir(parents=True)
    for path in COLUMN_SCALES:
        text = (ROOT / path).read_text()
        base = tomllib.loads(text)
        threads = sweep_schedule(plan(parse_spec(text, path), path)).threads
        variants = {"planned": {}, "rowscales": {}}
        variants.update({f"bm{m}": {"variant": "fragment", "block_m": m, "threads": m * threads} for m in (2, 4, 8) if m * threads <= 1024})
        for suffix, hints in variants.items():
            spec = dict(base, name=f"{base['name']}_{suffix}", schedule=dict(base.get("schedule", {}), **hints))
            if suffix == "rowscales":
                spec["op"] = [dict(op, scale_layout="row") if op["kind"] == "quant_fp8" else op for op in spec["op"]]
            (specs / f"{spec['name']}.toml").write_text(dump(spec))
    untuned = out / "no-tuning.json"
    untuned.write_text("{}")
    fusegen = Path(sys.executable).parent / "fusegen"
    subprocess.run([str(fusegen), "build", str(specs), "--out", str(out / "kernels"), "--tuning", str(untuned)], check=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
