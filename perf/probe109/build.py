"""probe109 (session 50): rows that share their threads — each thread holding the same columns of R rows of its block.

The planner gives every row of a block threads of its own (model.Layout): a thread holds one row's values, widens the
side inputs (weight, bias) for that row alone, and its row's reductions run one after another, each ending in a
barrier. Held by the same threads, R rows share the widened weight and bias, run their reductions side by side
(independent shuffle chains, one barrier a reduction for all R) and keep R rows' loads in flight a thread. A question
for the issue-bound rows (docs/bench/sweep/issue-floor.md), asked by hand before any generator work: the sweep's two
issue-bound chains — LayerNorm (weight, bias) → per-token FP8 at ten widths, RMSNorm → rescale (weight) → FP8 g64 at
2880 in bf16 and fp16 — and RMSNorm → FP8 g64 2880, the second without its rescale (0.93 × copy).

    .venv/bin/python perf/probe109/build.py

Builds each spec untuned (fusegen build, this tree) into kernels/time/kernels as NAME (the planner's program) and as
NAME_rR for each R, whose kernel.py runs `rows_program` (below) on every token count: the planner's fragment program
with its row fragment and reductions given a leading axis of R rows, all on the same threads (on the stream's
threads where the planner streams). R = 1 is the planner's fragment program itself (the same CUDA where the planner
chose it). rows_program is assembled from pieces, one an op as the planner emits it (LAYERNORM, RMSNORM, RESCALE,
TOKEN_QUANT, GROUP_QUANT), each with a row axis. On the device (`call.sh`): bits.py runs every variant against its
NAME on the same inputs, then perf/proto/probe_time.py times them all at the sweep count."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE.parent / "proto"))
from issue_estimate import sweep_program  # noqa: E402  (a sibling script: the program a package runs at its sweep count)

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
# A thread's values of its R rows at most: past this the rows would not fit ptxas's registers.
MOST_VALUES = 112

# The ops of each chain as spec TOML, and their side inputs as the generated kernel names them.
CHAIN_OPS = {
    "layernorm_token": ('kind = "layernorm"', 'kind = "quant_fp8"\ngroup_size = "token"'),
    "rmsnorm_rescale_g64": (
        'kind = "rmsnorm"',
        'kind = "rescale"\nfactor = 0.08838834764831845\nweight = true',
        'kind = "quant_fp8"\ngroup_size = 64',
    ),
    "rmsnorm_g64": ('kind = "rmsnorm"', 'kind = "quant_fp8"\ngroup_size = 64'),
}
SIDE_INPUTS = {"layernorm_token": ("Weight", "Bias"), "rmsnorm_rescale_g64": ("Weight", "ScaleWeight"), "rmsnorm_g64": ("Weight",)}


def spec_text(name: str, chain: str, dtype: str, hidden: int, fp8: str) -> str:
    ops = "".join(f"\n[[op]]\n{op}\n" + (f'fp8 = "{fp8}"\n' if "quant_fp8" in op else "") for op in CHAIN_OPS[chain])
    return f'name = "{name}"\ndtype = "{dtype}"\nhidden = {hidden}\n{ops}\n[outputs]\ny = false\n'


# The planner's one-row fragment programs of these chains (generated/…/kernel.py of the specs), with a leading axis
# of `rows` rows held by the same threads: row_thread ignores the row, row_index stacks the rows' registers. Per row
# the arithmetic is the planner's in the same order, so the outputs are its bits.
HEAD = """

def rows_program(threads: int, vector: int, columns: int, rows: int):
    \"\"\"probe109: the planner's fragment program with `rows` rows a block, every row on all the block's threads.\"\"\"
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
{side_params}
        Q: T.Tensor((m, HIDDEN), "{fp8}"),
        Scale: T.Tensor((m, {scale_columns}), "float32"),
    ):
        with T.Kernel(T.ceildiv(m, rows), threads=threads) as block:
            T.evaluate(T.call_extern("void", "__builtin_assume", T.call_extern("int32", "int", T.get_thread_binding()) < threads))
            row = T.alloc_fragment((rows, columns), "float32")
            T.annotate_layout({{row: T.Fragment((rows, columns), forward_thread_fn=row_thread, forward_index_fn=row_index)}})
            T.copy(X[block * rows, 0], row)
"""
STAGED = """            {staged} = T.alloc_fragment((columns,), "{dtype}")
            T.annotate_layout({{{staged}: T.Fragment((columns,), forward_thread_fn=column_thread, forward_index_fn=column_index)}})
            for j in T.Parallel(columns):
                {staged}[j] = T.if_then_else(j < HIDDEN, {param}[j], T.cast(0, "{dtype}"))
"""


def row_sum(source: str, name: str, result: str, op: str = "sum") -> str:
    """The planner's row reduction (codegen.row_reduce) of each of the block's rows into result[i]."""
    fold = f"T.max({result}[i], {name}_warps[i, w])" if op == "max" else f"{result}[i] + {name}_warps[i, w]"
    return f"""            {name}_lanes = T.alloc_fragment((rows, chunks, threads), "float32")
            {name}_thread = T.alloc_fragment((rows, threads), "float32")
            T.reduce_{op}(T.reshape({source}, (rows, chunks, threads, vector)), {name}_lanes, dim=3)
            T.reduce_{op}({name}_lanes, {name}_thread, dim=1)
            for i, t in T.Parallel(rows, threads):
                {name}_thread[i, t] = T.warp_reduce_{op}({name}_thread[i, t])
            {name}_warps = T.alloc_shared((rows, warps), "float32")
            for i, t in T.Parallel(rows, threads):
                if t % 32 == 0:
                    {name}_warps[i, t // 32] = {name}_thread[i, t]
            for i in T.Parallel(rows):
                {result}[i] = {name}_warps[i, 0]
                for w in T.serial(1, warps):
                    {result}[i] = {fold}
"""


LAYERNORM = (
    """            centered_sq = T.alloc_fragment((rows, columns), "float32")
            mean = T.alloc_fragment((rows,), "float32")
            rstd = T.alloc_fragment((rows,), "float32")
"""
    + row_sum("row", "row_sum", "mean")
    + """            for i in T.Parallel(rows):
                mean[i] = mean[i] * (1.0 / HIDDEN)
            for i, j in T.Parallel(rows, columns):
                row[i, j] = T.if_then_else(j < HIDDEN, row[i, j] - mean[i], 0.0)
            for i, j in T.Parallel(rows, columns):
                centered_sq[i, j] = row[i, j] * row[i, j]
"""
    + row_sum("centered_sq", "centered_sum", "rstd")
    + """            for i in T.Parallel(rows):
                rstd[i] = T.rsqrt(rstd[i] * (1.0 / HIDDEN) + EPS)
            for i, j in T.Parallel(rows, columns):
                row[i, j] = row[i, j] * rstd[i] * weight_staged[j] + bias_staged[j]
"""
)
RMSNORM = (
    """            sumsq_terms = T.alloc_fragment((rows, columns), "float32")
            rstd = T.alloc_fragment((rows,), "float32")
            for i, j in T.Parallel(rows, columns):
                sumsq_terms[i, j] = row[i, j] * row[i, j]
"""
    + row_sum("sumsq_terms", "sumsq", "rstd")
    + """            for i in T.Parallel(rows):
                rstd[i] = T.rsqrt(rstd[i] * (1.0 / HIDDEN) + EPS)
            for i, j in T.Parallel(rows, columns):
                row[i, j] = row[i, j] * rstd[i] * weight_staged[j]
"""
)
RESCALE = """            for i, j in T.Parallel(rows, columns):
                row[i, j] = row[i, j] * SCALE_FACTOR * scaleweight_staged[j]
"""
MAGNITUDES = """            quantized = T.alloc_fragment((rows, columns), "{fp8}")
            T.annotate_layout({{quantized: T.Fragment((rows, columns), forward_thread_fn=row_thread, forward_index_fn=row_index)}})
            row_abs = T.alloc_fragment((rows, columns), "float32")
            T.annotate_layout({{row_abs: T.Fragment((rows, columns), forward_thread_fn=row_thread, forward_index_fn=row_index)}})
            for i, j in T.Parallel(rows, columns):
                row_abs[i, j] = T.abs(row[i, j])
"""
SCALE_STEPS = """                {at} = T.max({at}, AMAX_FLOOR)
                {at} = T.fma(T.fma(T.fmul({at}, FP8_MAX_RECIPROCAL), -FP8_MAX, {at}), FP8_MAX_RECIPROCAL, T.fmul({at}, FP8_MAX_RECIPROCAL))
                {inverse} = T.call_extern("float32", "__frcp_rn", {at})
"""
TOKEN_QUANT = (
    """            group_scale = T.alloc_fragment((rows,), "float32")
            inverse_scale = T.alloc_fragment((rows,), "float32")
"""
    + MAGNITUDES
    + row_sum("row_abs", "row_amax", "group_scale", "max")
    + "            for i in T.Parallel(rows):\n"
    + SCALE_STEPS.format(at="group_scale[i]", inverse="inverse_scale[i]")
    + """            for i, j in T.Parallel(rows, columns):
                quantized[i, j] = T.cast(row[i, j] * inverse_scale[i], "{fp8}")
            T.copy(quantized, Q[block * rows, 0])
            for i in T.Parallel(rows):
                if block * rows + i < m:
                    Scale[block * rows + i, 0] = group_scale[i]
"""
)
GROUP_QUANT = (
    """            group_scale = T.alloc_fragment((rows, columns // GROUP_SIZE), "float32")
            inverse_scale = T.alloc_fragment((rows, columns // GROUP_SIZE), "float32")
"""
    + MAGNITUDES
    + """            T.reduce_max(T.reshape(row_abs, (rows, columns // GROUP_SIZE, GROUP_SIZE)), group_scale, dim=2)
            for i, k in T.Parallel(rows, columns // GROUP_SIZE):
"""
    + SCALE_STEPS.format(at="group_scale[i, k]", inverse="inverse_scale[i, k]")
    + """            for i, j in T.Parallel(rows, columns):
                quantized[i, j] = T.cast(row[i, j] * inverse_scale[i, j // GROUP_SIZE], "{fp8}")
            T.copy(quantized, Q[block * rows, 0])
            T.copy(group_scale, Scale[block * rows, 0])
"""
)
TAIL = """
    return fused.with_attr("global_symbol", NAME)


def program_rows():
    return rows_program(threads={threads}, vector=8, columns={columns}, rows={rows})


"""
CHAIN_BODY = {
    "layernorm_token": (LAYERNORM, TOKEN_QUANT),
    "rmsnorm_rescale_g64": (RMSNORM, RESCALE, GROUP_QUANT),
    "rmsnorm_g64": (RMSNORM, GROUP_QUANT),
}


def rows_program(chain: str, dtype: str, fp8: str, threads: int, columns: int, rows: int) -> str:
    """The source of rows_program and program_rows for `chain`, to follow the generated kernel's definitions."""
    sides = SIDE_INPUTS[chain]
    head = HEAD.format(
        dtype=dtype,
        fp8=fp8,
        side_params="\n".join(f'        {param}: T.Tensor((HIDDEN,), "{dtype}"),' for param in sides),
        scale_columns="1" if chain.endswith("token") else "HIDDEN // GROUP_SIZE",
    )
    staged = "".join(STAGED.format(staged=f"{param.lower()}_staged", param=param, dtype=dtype) for param in sides)
    body = "".join(CHAIN_BODY[chain]).format(fp8=fp8)
    return head + staged + body + TAIL.format(threads=threads, columns=columns, rows=rows)


def built(specs: Path, out: Path) -> None:
    empty = specs.parent / "no-tuning.json"
    empty.write_text("{}\n")
    subprocess.run([sys.executable, "-m", "fusegen", "build", str(specs), "--out", str(out), "--tuning", str(empty)], check=True, cwd=ROOT)


def with_rows(kernel_py: Path, chain: str, dtype: str, fp8: str, threads: int, columns: int, rows: int) -> None:
    """kernel.py made to run rows_program on every token count."""
    text = kernel_py.read_text()
    head, routes = text.split("\n# (first token count, last or None for no limit, program)", 1)
    routes = routes.split("\n", 2)[2]  # past the comment's line and the ROUTES line
    program = rows_program(chain, dtype, f"float8_{fp8}", threads, columns, rows)
    kernel_py.write_text(head + program + "ROUTES = ((1, None, program_rows),)\n" + routes)


def main() -> None:
    kernels = HERE / "kernels"
    shutil.rmtree(kernels, ignore_errors=True)
    specs, time_dir = kernels / "specs", kernels / "time" / "kernels"
    specs.mkdir(parents=True)
    variants = {}  # variant name -> (planner's name, chain, dtype, hidden, fp8, rows)
    for chain, dtype, hidden, fp8 in SPECS:
        name = f"p109_{chain}_{fp8}_{dtype}_{hidden}"
        (specs / f"{name}.toml").write_text(spec_text(name, chain, dtype, hidden, fp8))
        for rows in (1, 2, 4):
            variants[f"{name}_r{rows}"] = (name, chain, dtype, hidden, fp8, rows)
            (specs / f"{name}_r{rows}.toml").write_text(spec_text(f"{name}_r{rows}", chain, dtype, hidden, fp8))
    built(specs, time_dir)
    for variant, (name, chain, dtype, hidden, fp8, rows) in variants.items():
        _, schedule, _ = sweep_program(time_dir / name)
        threads = schedule["threads"]
        columns = -(-hidden // (threads * 8)) * threads * 8
        if columns // threads * rows > MOST_VALUES:
            shutil.rmtree(time_dir / variant)
            print(f"{variant}: not built ({columns // threads * rows} values a thread)")
            continue
        with_rows(time_dir / variant / "kernel.py", chain, dtype, fp8, threads, columns, rows)
        print(f"{variant}: {rows} row(s) a block on {threads} threads, {columns // threads} values a row a thread ({schedule['variant']})")


if __name__ == "__main__":
    main()
