"""probe98 (session 42): plain rows (norms, with or without the residual add; no RoPE, no FP8) at 64–256
tokens against torch.compile, on the planner's threads and on twice and four times as many. The committed
sweep's only rows slower than torch.compile at 256 tokens are fp32 add → RMSNorm 3072 and 6144 (0.98 ×, p10–p90
apart); the plain rows are where torch.compile's own kernel is as good as ours, so they are where a few-token
route would have to win.

`specs OUT` writes, for each plain spec of perf/sweep and the held-out ones below, NAME_p (unhinted) and NAME_t2,
NAME_t4 (schedule.threads pinned at 2× and 4× the planner's count for many tokens, up to 1024) into OUT.

    .venv/bin/python perf/probe98/build.py specs perf/probe98/specs
    (device) python3 -m fusegen bench perf/probe98/specs --tokens 64 128 256 --baselines compile --no-host-cost \\
        --tuning EMPTY.json --out-dir $OUT/bench"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from test_injection import dump  # noqa: E402

from fusegen.plan import plan  # noqa: E402
from fusegen.spec import parse_spec  # noqa: E402

PLAIN = {"rmsnorm", "layernorm", "add_residual"}
# Held out: widths and dtypes the sweep's plain rows do not have.
HELD_OUT = [
    ("hold_rms_bf16_4096", "bfloat16", 4096, [{"kind": "rmsnorm", "eps": 1e-6}]),
    ("hold_add_rms_bf16_7168", "bfloat16", 7168, [{"kind": "add_residual"}, {"kind": "rmsnorm", "eps": 1e-6}]),
    ("hold_ln_f16_2048", "float16", 2048, [{"kind": "layernorm", "eps": 1e-5}]),
    ("hold_ln_f32_4096", "float32", 4096, [{"kind": "layernorm", "eps": 1e-5}]),
    ("hold_add_rms_f16_2560", "float16", 2560, [{"kind": "add_residual"}, {"kind": "rmsnorm", "eps": 1e-6}]),
    ("hold_rms_f32_1536", "float32", 1536, [{"kind": "rmsnorm", "eps": 1e-6}]),
    ("hold_add_ln_bf16_3584", "bfloat16", 3584, [{"kind": "add_residual"}, {"kind": "layernorm", "eps": 1e-5}]),
    ("hold_add_rms_f32_5120", "float32", 5120, [{"kind": "add_residual"}, {"kind": "rmsnorm", "eps": 1e-6}]),
]


def plain_specs() -> list[dict]:
    found = []
    for path in sorted((ROOT / "perf" / "sweep").glob("*.toml")):
        data = tomllib.loads(path.read_text())
        if {op["kind"] for op in data["op"]} <= PLAIN:
            found.append(data)
    held = [{"name": n, "dtype": d, "hidden": h, "op": ops} for n, d, h, ops in HELD_OUT]
    return found + held


def planned_threads(data: dict) -> int:
    """The threads of the planner's route for many tokens."""
    return plan(parse_spec(dump(data), data["name"]), data["name"]).routes[-1].schedule.threads


def write_specs(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for data in plain_specs():
        threads = planned_threads(data)
        variants = {"p": None} | {f"t{k}": threads * k for k in (2, 4) if threads * k <= 1024}
        for suffix, pinned in variants.items():
            spec = dict(data, name=f"{data['name']}_{suffix}")
            if pinned:
                spec["schedule"] = {"threads": pinned}
            (out / f"{spec['name']}.toml").write_text(dump(spec))


if __name__ == "__main__":
    if sys.argv[1:2] != ["specs"] or len(sys.argv) != 3:
        sys.exit(__doc__)
    write_specs(Path(sys.argv[2]))
