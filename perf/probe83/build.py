"""probe83 (built in session 38, not yet run): 16-bit LayerNorm → FP8 rows on fewer warps. perf/probe82 found
bf16 LayerNorm → FP8 g64 5376 at 0.74 × copy on the planner's 224 threads × 24 values and 0.86 on 96 × 56
(quick tune's candidate, 8 blocks an SM); session 32's bf16 LayerNorm → e5m2 2880 is bound by the same three
reductions a row. Held-out question: do such rows run faster on the fewest warps that hold them in 16-byte
vectors at most 56 values a thread? A fresh draw (seed 8301) of 16-bit chains of LayerNorm over the whole row
then FP8 (residual add and rescale allowed, no RoPE), hidden 2048 and up, each as NAME_p (the planner's) and
NAME_few (threads pinned to that count, the rest auto), untuned into kernels/time/kernels; the _few builds also
into kernels/check/kernels.

    .venv/bin/python perf/probe83/build.py perf/probe83/kernels
    OUT=... ROUNDS=2 bash perf/probe51/call.sh perf/probe83/kernels      # on the device"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "perf" / "proto"))
from probe_scripts import probe_script  # noqa: E402  (a sibling script)
from test_injection import dump  # noqa: E402

planned = probe_script("probe80").planned  # the spec's many-token schedule, or None where the planner refuses it

SEED, DRAWN = 8301, 16
WIDTHS = (2304, 2880, 3072, 3584, 4096, 5120, 5376, 6144, 7168, 8192)
MOST_VALUES = 56
WARP = 32


def layernorm_to_fp8(spec: dict) -> bool:
    kinds = [op["kind"] for op in spec["op"]]
    if spec["dtype"] == "float32" or spec["hidden"] < 2048 or spec.get("head_dim"):
        return False
    if not {"layernorm", "quant_fp8"} <= set(kinds) or not set(kinds) <= {"add_residual", "layernorm", "rescale", "quant_fp8"}:
        return False
    if any(op.get("columns") for op in spec["op"]):
        return False
    schedule = planned(spec)
    return schedule is not None and schedule.variant == "fragment" and few_threads(spec) < schedule.threads


def few_threads(spec: dict) -> int:
    """The fewest whole warps holding the row in 16-byte vectors at most MOST_VALUES values a thread."""
    vector = 8  # 16-bit values in 16 bytes
    vectors = -(-spec["hidden"] // vector)
    threads = WARP
    while -(-vectors // threads) * vector > MOST_VALUES:
        threads += WARP
    return threads


def main(out: Path) -> None:
    specs = out / "specs"
    specs.mkdir(parents=True)
    for base in probe_script("probe51").drawn_specs(SEED, DRAWN, layernorm_to_fp8, WIDTHS, "ln83"):
        hinted = dict(base, name=f"{base['name']}_few", schedule=dict(base.get("schedule", {}), threads=few_threads(base)))
        for spec in (dict(base, name=f"{base['name']}_p"), hinted):
            if planned(spec) is not None:
                (specs / f"{spec['name']}.toml").write_text(dump(spec))
    probe_script("probe73").build_checked(specs, out, lambda package: package.endswith("_few"))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
