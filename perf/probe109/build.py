"""probe109 (session 50): rows that share their threads — each thread holding the same columns of R rows of its block.

The planner gives every row of a block threads of its own (model.Layout): a thread holds one row's values, widens the
side inputs (weight, bias) for that row alone, and its row's reductions run one after another, each ending in a
barrier. Held by the same threads, R rows share the widened weight and bias, run their reductions side by side
(independent shuffle chains, one barrier a reduction for all R) and keep R rows' loads in flight a thread. A question
for the issue-bound rows (docs/bench/sweep/issue-floor.md): the sweep's two issue-bound chains — LayerNorm (weight,
bias) → per-token FP8 at ten widths, RMSNorm → rescale (weight) → FP8 g64 at 2880 in bf16 and fp16 — and RMSNorm → FP8
g64 at 2880, the second without its rescale (0.93 × copy).

    .venv/bin/python perf/probe109/build.py

Builds each spec untuned (fusegen build, this tree) into kernels/time/kernels as NAME (the planner's program) and as
NAME_rR for R = 1, 2, 4: the fragment program on the threads of the planner's program at the sweep count, R rows a
block on those same threads (the schedule hint rows_share_threads; R = 1 is the planner's fragment program, the
planner's own program wherever it chose a fragment one), where a thread's values stay within what the planner allows.
Session 50 wrote these programs by hand; session 51's generator compiles them to the same SASS and registers, all 20
(results/generator-check.txt), so they are built from the hints now. On the device (`call.sh`): bits.py runs every
variant against its NAME on the same inputs, then perf/proto/probe_time.py times them all at the sweep count."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from rows_hints import build, planned, sharing  # noqa: E402  (shared with perf/probe110)
from test_injection import dump  # noqa: E402  (tests/, on the path rows_hints gives)

from fusegen.bench import sweep_tokens  # noqa: E402

# (chain, dtype, hidden, fp8): the sweep's two issue-bound chains (bf16 LayerNorm → e5m2 2880, 0.79 × copy; bf16
# RMSNorm → rescale → FP8 g64 2880, 0.83) and their neighbours — RMSNorm → FP8 g64 2880, 0.93, the same row without
# the rescale — and LayerNorm → FP8 at widths the planner gives fragment programs of 64 and 128 threads and streams.
SPECS = (
    ("layernorm_token", "bfloat16", 2880, "e5m2"),
    ("layernorm_token", "bfloat16", 2880, "e4m3fn"),
    ("layernorm_token", "float16", 2880, "e4m3fn"),
    ("layernorm_token", "bfloat16", 1536, "e4m3fn"),
    ("layernorm_token", "bfloat16", 2048, "e4m3fn"),
    ("layernorm_token", "bfloat16", 3584, "e4m3fn"),
    ("layernorm_token", "bfloat16", 4096, "e4m3fn"),
    ("layernorm_token", "float16", 5120, "e4m3fn"),
    ("layernorm_token", "float16", 6144, "e4m3fn"),
    ("layernorm_token", "bfloat16", 7168, "e4m3fn"),
    ("rmsnorm_rescale_g64", "bfloat16", 2880, "e4m3fn"),
    ("rmsnorm_rescale_g64", "float16", 2880, "e4m3fn"),
    ("rmsnorm_g64", "bfloat16", 2880, "e4m3fn"),
)
ROWS = (1, 2, 4)
# The ops of each chain (quant_fp8 takes the row's fp8 format).
CHAIN_OPS = {
    "layernorm_token": ({"kind": "layernorm"}, {"kind": "quant_fp8", "group_size": "token"}),
    "rmsnorm_rescale_g64": (
        {"kind": "rmsnorm"},
        {"kind": "rescale", "factor": 0.08838834764831845, "weight": True},
        {"kind": "quant_fp8", "group_size": 64},
    ),
    "rmsnorm_g64": ({"kind": "rmsnorm"}, {"kind": "quant_fp8", "group_size": 64}),
}


def chain_spec(chain: str, dtype: str, hidden: int, fp8: str) -> dict:
    ops = [dict(op, fp8=fp8) if op["kind"] == "quant_fp8" else dict(op) for op in CHAIN_OPS[chain]]
    return {"name": f"p109_{chain}_{fp8}_{dtype}_{hidden}", "dtype": dtype, "hidden": hidden, "op": ops, "outputs": {"y": False}}


def main() -> None:
    kernels = HERE / "kernels"
    shutil.rmtree(kernels, ignore_errors=True)
    specs = kernels / "specs"
    specs.mkdir(parents=True)
    for spec in (chain_spec(*row) for row in SPECS):
        threads = planned(spec).route_for(sweep_tokens(spec["hidden"])).schedule.threads
        variants = [v for v in (sharing(spec, threads, rows) for rows in ROWS) if planned(v) is not None]
        for written in (spec, *variants):
            (specs / f"{written['name']}.toml").write_text(dump(written))
        print(f"{spec['name']}: {threads} threads, rows {[v['schedule']['block_m'] for v in variants]}", flush=True)
    build(specs, kernels / "time" / "kernels")


if __name__ == "__main__":
    main()
