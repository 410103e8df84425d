"""probe109 (session 50): rows that share their threads — each thread holding the same columns of R rows of its block.

The planner gives every row of a block threads of its own (model.Layout): a thread holds one row's values, widens the
side inputs (weight, bias) for that row alone, and its row's reductions run one after another, each ending in a
barrier. Held by the same threads, R rows share the widened weight and bias, run their reductions side by side
(independent shuffle chains, one barrier a reduction for all R) and keep R rows' loads in flight a thread. A question
for the issue-bound rows (docs/bench/sweep/issue-floor.md), asked by hand before any generator work: LayerNorm (weight,
bias) → per-token FP8, the chain of the sweep's slowest row, at ten widths.

    .venv/bin/python perf/probe109/build.py

Builds each spec untuned (fusegen build, this tree) into kernels/time/kernels as NAME (the planner's program) and as
NAME_rR for each R, whose kernel.py runs `rows_program` (below) on every token count: the planner's fragment program
with its row fragment and reductions given a leading axis of R rows, all on the same threads (on the stream's
threads where the planner streams). R = 1 is the planner's fragment program itself (the same CUDA where the planner
chose it). On the device (`call.sh`): bits.py runs every variant against its NAME on the same inputs, then
perf/proto/probe_time.py times them all at the sweep count."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
from fusegen.bench import sweep_tokens  # noqa: E402

# (dtype, hidden, fp8): the sweep's row (bf16 2880 e5m2, 0.79 × copy) and the chain at widths the planner gives
# fragment programs of 64 and 128 threads and streams.
SPECS = (
    ("bfloat16", 2880, "e5m2"),
    ("bfloat16", 2880, "e4m3fn"),
    ("float16", 2880, "e4m3fn"),
    ("bfloat16", 1536, "e4m3fn"),
    ("bfloat16", 2048, "e4m3fn"),
    ("bfloat16", 3584, "e4m3fn"),
    ("bfloat16", 4096, "e4m3fn"),
    ("float16", 5120, "e4m3fn"),
    ("float16", 6144, "e4m3fn"),
    ("bfloat16", 7168, "e4m3fn"),
)
# A thread's values of its R rows at most: past this the rows would not fit ptxas's registers.
MOST_VALUES = 112

SPEC = """name = "{name}"
dtype = "{dtype}"
hidden = {hidden}

[[op]]
kind = "layernorm"

[[op]]
kind = "quant_fp8"
group_size = "token"
fp8 = "{fp8}"

[outputs]
y = false
"""

# The planner's one-row fragment program of LayerNorm → per-token FP8 (generated/…/kernel.py of these specs), with a
# leading axis of `rows` rows held by the same threads: row_thread ignores the row, row_index stacks the rows'
# registers. Per row the arithmetic is the planner's in the same order, so the outputs are its bits.
ROWS_PROGRAM = '''

def rows_program(threads: int, vector: int, columns: int, rows: int):
    """probe109: the planner's fragment program with `rows` rows a block, every row on all the block's threads."""
    m = T.dynamic("m")
    chunks = columns // (threads * vector)
    warps = threads // 32
    per_row = chunks * vector

    def row_thread(i, j):
        return j // vector % threads

    def row_index(i, j):
        return i * per_row + j // (vector * threads) * vector + j % vector

    def column_thread(j):
        return j // vector % threads

    def column_index(j):
        return j // (vector * threads) * vector + j % vector

    @T.prim_func
    def fused(
        X: T.Tensor((m, HIDDEN), "{dtype}"),
        Weight: T.Tensor((HIDDEN,), "{dtype}"),
        Bias: T.Tensor((HIDDEN,), "{dtype}"),
        Q: T.Tensor((m, HIDDEN), "{fp8}"),
        Scale: T.Tensor((m, 1), "float32"),
    ):
        with T.Kernel(T.ceildiv(m, rows), threads=threads) as block:
            T.evaluate(T.call_extern("void", "__builtin_assume", T.call_extern("int32", "int", T.get_thread_binding()) < threads))
            row = T.alloc_fragment((rows, columns), "float32")
            T.annotate_layout({{row: T.Fragment((rows, columns), forward_thread_fn=row_thread, forward_index_fn=row_index)}})
            T.copy(X[block * rows, 0], row)
            weight_staged = T.alloc_fragment((columns,), "{dtype}")
            T.annotate_layout({{weight_staged: T.Fragment((columns,), forward_thread_fn=column_thread, forward_index_fn=column_index)}})
            for j in T.Parallel(columns):
                weight_staged[j] = T.if_then_else(j < HIDDEN, Weight[j], T.cast(0, "{dtype}"))
            bias_staged = T.alloc_fragment((columns,), "{dtype}")
            T.annotate_layout({{bias_staged: T.Fragment((columns,), forward_thread_fn=column_thread, forward_index_fn=column_index)}})
            for j in T.Parallel(columns):
                bias_staged[j] = T.if_then_else(j < HIDDEN, Bias[j], T.cast(0, "{dtype}"))
            centered_sq = T.alloc_fragment((rows, columns), "float32")
            mean = T.alloc_fragment((rows,), "float32")
            rstd = T.alloc_fragment((rows,), "float32")
            row_sum_lanes = T.alloc_fragment((rows, chunks, threads), "float32")
            row_sum_thread = T.alloc_fragment((rows, threads), "float32")
            T.reduce_sum(T.reshape(row, (rows, chunks, threads, vector)), row_sum_lanes, dim=3)
            T.reduce_sum(row_sum_lanes, row_sum_thread, dim=1)
            for i, t in T.Parallel(rows, threads):
                row_sum_thread[i, t] = T.warp_reduce_sum(row_sum_thread[i, t])
            row_sum_warps = T.alloc_shared((rows, warps), "float32")
            for i, t in T.Parallel(rows, threads):
                if t % 32 == 0:
                    row_sum_warps[i, t // 32] = row_sum_thread[i, t]
            for i in T.Parallel(rows):
                mean[i] = row_sum_warps[i, 0]
                for w in T.serial(1, warps):
                    mean[i] = mean[i] + row_sum_warps[i, w]
                mean[i] = mean[i] * (1.0 / HIDDEN)
            for i, j in T.Parallel(rows, columns):
                row[i, j] = T.if_then_else(j < HIDDEN, row[i, j] - mean[i], 0.0)
            for i, j in T.Parallel(rows, columns):
                centered_sq[i, j] = row[i, j] * row[i, j]
            centered_sum_lanes = T.alloc_fragment((rows, chunks, threads), "float32")
            centered_sum_thread = T.alloc_fragment((rows, threads), "float32")
            T.reduce_sum(T.reshape(centered_sq, (rows, chunks, threads, vector)), centered_sum_lanes, dim=3)
            T.reduce_sum(centered_sum_lanes, centered_sum_thread, dim=1)
            for i, t in T.Parallel(rows, threads):
                centered_sum_thread[i, t] = T.warp_reduce_sum(centered_sum_thread[i, t])
            centered_sum_warps = T.alloc_shared((rows, warps), "float32")
            for i, t in T.Parallel(rows, threads):
                if t % 32 == 0:
                    centered_sum_warps[i, t // 32] = centered_sum_thread[i, t]
            for i in T.Parallel(rows):
                rstd[i] = centered_sum_warps[i, 0]
                for w in T.serial(1, warps):
                    rstd[i] = rstd[i] + centered_sum_warps[i, w]
                rstd[i] = T.rsqrt(rstd[i] * (1.0 / HIDDEN) + EPS)
            for i, j in T.Parallel(rows, columns):
                row[i, j] = row[i, j] * rstd[i] * weight_staged[j] + bias_staged[j]
            group_scale = T.alloc_fragment((rows,), "float32")
            inverse_scale = T.alloc_fragment((rows,), "float32")
            quantized = T.alloc_fragment((rows, columns), "{fp8}")
            T.annotate_layout({{quantized: T.Fragment((rows, columns), forward_thread_fn=row_thread, forward_index_fn=row_index)}})
            row_abs = T.alloc_fragment((rows, columns), "float32")
            T.annotate_layout({{row_abs: T.Fragment((rows, columns), forward_thread_fn=row_thread, forward_index_fn=row_index)}})
            for i, j in T.Parallel(rows, columns):
                row_abs[i, j] = T.abs(row[i, j])
            row_amax_lanes = T.alloc_fragment((rows, chunks, threads), "float32")
            row_amax_thread = T.alloc_fragment((rows, threads), "float32")
            T.reduce_max(T.reshape(row_abs, (rows, chunks, threads, vector)), row_amax_lanes, dim=3)
            T.reduce_max(row_amax_lanes, row_amax_thread, dim=1)
            for i, t in T.Parallel(rows, threads):
                row_amax_thread[i, t] = T.warp_reduce_max(row_amax_thread[i, t])
            row_amax_warps = T.alloc_shared((rows, warps), "float32")
            for i, t in T.Parallel(rows, threads):
                if t % 32 == 0:
                    row_amax_warps[i, t // 32] = row_amax_thread[i, t]
            for i in T.Parallel(rows):
                group_scale[i] = row_amax_warps[i, 0]
                for w in T.serial(1, warps):
                    group_scale[i] = T.max(group_scale[i], row_amax_warps[i, w])
                group_scale[i] = T.max(group_scale[i], AMAX_FLOOR)
                group_scale[i] = T.fma(T.fma(T.fmul(group_scale[i], FP8_MAX_RECIPROCAL), -FP8_MAX, group_scale[i]), FP8_MAX_RECIPROCAL, T.fmul(group_scale[i], FP8_MAX_RECIPROCAL))
                inverse_scale[i] = T.call_extern("float32", "__frcp_rn", group_scale[i])
            for i, j in T.Parallel(rows, columns):
                quantized[i, j] = T.cast(row[i, j] * inverse_scale[i], "{fp8}")
            T.copy(quantized, Q[block * rows, 0])
            for i in T.Parallel(rows):
                if block * rows + i < m:
                    Scale[block * rows + i, 0] = group_scale[i]

    return fused.with_attr("global_symbol", NAME)


def program_rows():
    return rows_program(threads={threads}, vector=8, columns={columns}, rows={rows})


'''


def built(specs: Path, out: Path) -> None:
    empty = specs.parent / "no-tuning.json"
    empty.write_text("{}\n")
    subprocess.run([sys.executable, "-m", "fusegen", "build", str(specs), "--out", str(out), "--tuning", str(empty)], check=True, cwd=ROOT)


def sweep_schedule(package: Path) -> dict:
    plan = json.loads((package / "plan.json").read_text())
    tokens = sweep_tokens(plan["hidden"])
    return next(r for r in plan["routes"] if r["first_tokens"] <= tokens and (r["last_tokens"] or tokens) >= tokens)["schedule"]


def with_rows(kernel_py: Path, dtype: str, fp8: str, threads: int, columns: int, rows: int) -> None:
    """kernel.py made to run rows_program on every token count."""
    text = kernel_py.read_text()
    head, routes = text.split("\n# (first token count, last or None for no limit, program)", 1)
    routes = routes.split("\n", 2)[2]  # past the comment's line and the ROUTES line
    program = ROWS_PROGRAM.format(dtype=dtype, fp8=f"float8_{fp8}", threads=threads, columns=columns, rows=rows)
    kernel_py.write_text(head + program + "ROUTES = ((1, None, program_rows),)\n" + routes)


def main() -> None:
    kernels = HERE / "kernels"
    shutil.rmtree(kernels, ignore_errors=True)
    specs, time_dir = kernels / "specs", kernels / "time" / "kernels"
    specs.mkdir(parents=True)
    variants = {}  # variant name -> (dtype, fp8, rows)
    for dtype, hidden, fp8 in SPECS:
        name = f"p109_ln_{fp8}_{dtype}_{hidden}"
        (specs / f"{name}.toml").write_text(SPEC.format(name=name, dtype=dtype, hidden=hidden, fp8=fp8))
        for rows in (1, 2, 4):
            variants[f"{name}_r{rows}"] = (name, dtype, hidden, fp8, rows)
            (specs / f"{name}_r{rows}.toml").write_text(SPEC.format(name=f"{name}_r{rows}", dtype=dtype, hidden=hidden, fp8=fp8))
    built(specs, time_dir)
    for variant, (name, dtype, hidden, fp8, rows) in variants.items():
        schedule = sweep_schedule(time_dir / name)
        threads = schedule["threads"]
        columns = -(-hidden // (threads * 8)) * threads * 8
        if columns // threads * rows > MOST_VALUES:
            shutil.rmtree(time_dir / variant)
            print(f"{variant}: not built ({columns // threads * rows} values a thread)")
            continue
        with_rows(time_dir / variant / "kernel.py", dtype, fp8, threads, columns, rows)
        print(f"{variant}: {rows} row(s) a block on {threads} threads, {columns // threads} values a row a thread ({schedule['variant']})")


if __name__ == "__main__":
    main()
