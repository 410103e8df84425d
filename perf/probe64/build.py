"""probe64: schedule.fp8_row_full_sm held out on the H200 — float32 chains writing only FP8, drawn fresh (seed
6401: every chain kind that can write only FP8, widths 1024–16384 in steps of 128), with the sweep's and
probe59's rows the rule takes from the stream. Each spec whose plan the rule changes, as NAME_old (the tree
before it) and NAME_new (this tree), both untuned, into kernels/time/kernels (perf/proto/probe_time.py times
them and compares their outputs bit for bit), the _new ones also into kernels/check/kernels
(scripts/gpu_hunt.py check).

    git worktree add /tmp/oldwt 8f46290
    .venv/bin/python perf/probe64/build.py /tmp/oldwt perf/probe64/kernels       (--list as OUT: the draw only)"""

from __future__ import annotations

import importlib.util
import random
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "perf" / "proto"))
from probe_scripts import probe_script  # noqa: E402  (a sibling script)

probe52 = probe_script("probe52")

from fusegen.plan import plan  # noqa: E402
from fusegen.spec import parse_spec  # noqa: E402

SEED = 6401
DRAWN = 30
# (label, the sweep generator's label for each op's keys, op kinds): every chain that can write only FP8
CHAINS = (
    ("rms_quant", "rms_quant", ("rmsnorm", "quant_fp8")),
    ("ln_quant", "ln_quant", ("layernorm", "quant_fp8")),
    ("rms_rope_quant", "rms_rope_quant", ("rmsnorm", "rope", "quant_fp8")),
    ("ln_rope_quant", "ln_rope_quant", ("layernorm", "rope", "quant_fp8")),
    ("add_rms_quant", "add_rms_quant", ("add_residual", "rmsnorm", "quant_fp8")),
    ("rms_cache_rope_quant", "rms_cache_rope", ("rmsnorm", "rope", "quant_fp8")),
    ("qk_norm_rope_quant", "qk_norm_rope", ("rmsnorm", "rope", "quant_fp8")),
)
FROM_STREAM = ("perf/sweep/sweep_ln_quant_f32_5120.toml", "perf/sweep/sweep_ln_rope_quant_f32_7168.toml")
FROM_STREAM_PROBE59 = ("held59_ln_quant_f32_4480", "held59_ln_quant_f32_6912")
# tests/test_default_schedule.py's own-count stream (perf/probe57: 0.87–0.95 streamed, 0.66–0.67 fragment)
OWN_COUNT_STREAM = {
    "name": "stream57_ln_quant_g64_f32_5376",
    "dtype": "float32",
    "hidden": 5376,
    "op": [{"kind": "layernorm", "eps": 1e-5}, {"kind": "quant_fp8", "group_size": 64}],
    "outputs": {"y": False},
}


def _sweep_generator():
    loaded = importlib.util.spec_from_file_location("sweep_specs", ROOT / "scripts" / "sweep_specs.py")
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    return module


def ruled(base: dict) -> bool:
    """Whether this tree's planner bounds the spec by schedule.fp8_row_full_sm."""
    routes = plan(parse_spec(probe52.dump(base), "spec.toml"), "spec.toml").routes
    return any("writes only FP8 waits longest" in why for r in routes for why in r.schedule.reasons)


def drawn(seed: int = SEED, count: int = DRAWN, keep=ruled, prefix: str = "held64") -> list[dict]:
    """`count` float32 specs writing only FP8 that `keep` takes (by default those the rule bounds), chains in
    turn, widths drawn, named `prefix`_…"""
    sweep = _sweep_generator()
    rng = random.Random(seed)
    specs, turn = [], 0
    while len(specs) < count:
        label, keys, kinds = CHAINS[turn % len(CHAINS)]
        turn += 1
        hidden = rng.randrange(1024, 16385, 128)
        spec = {"name": f"{prefix}_{label}_f32_{hidden}", "dtype": "float32", "hidden": hidden}
        ops = [sweep._op(kind, keys, hidden, rng) for kind in kinds]
        if label == "qk_norm_rope_quant":
            dims = [d for d in sweep.HEAD_DIMS if hidden % d == 0 and d >= ops[1]["rope_dim"]]
            if not dims:
                continue
            spec["head_dim"] = rng.choice(dims)
        for op in ops:
            op.pop("scale_layout", None)  # column-major scales take several rows a block (schedule.sector_rows)
        spec["op"] = ops
        spec["outputs"] = {"y": False} | ({"residual": False} if "add_residual" in kinds else {})
        if spec["name"] not in {s["name"] for s in specs} and keep(spec):
            specs.append(spec)
    return specs


def bases() -> list[dict]:
    probe58 = probe_script("probe58")
    probe59 = probe_script("probe59")
    held59 = {b["name"]: b for b in probe58.drawn(probe59.SEED, probe59.WIDTHS, "held59")}
    return (
        drawn()
        + [tomllib.loads((ROOT / p).read_text()) for p in FROM_STREAM]
        + [held59[n] for n in FROM_STREAM_PROBE59]
        + [OWN_COUNT_STREAM]
    )


def main(old_tree: Path, out: Path) -> None:
    chosen = bases()
    for base in chosen:
        print(base["name"], [op["kind"] for op in base["op"]])
    if out.name == "--list":
        return
    probe52.build_changed(old_tree, out, chosen)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
