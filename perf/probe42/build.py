"""perf/probe42: wide rows read twice — the norm's statistics from a first pass over the row, one vector
a thread at a time, then each tile re-read (from L2) normalised, rotated, quantised and stored — beside
the planner's one-read fragment programs, which hold the whole row in registers and so fit two blocks an
SM at 12288–16384 columns.

    python perf/probe42/build.py OUT_DIR

Builds the two sweep specs with the planner (`NAME_planner`), then writes hand-written two-pass programs
into copies of those packages (`NAME_t{threads}_b{blocks}`): same interface, identity and reference, so
perf/proto/probe_check.py checks them and perf/proto/probe_time.py times them beside the planner's. The
programs are written for these two chains only (RMSNorm → GPT-J RoPE tail 64 → FP8 group 64 ue8m0, no Y;
LayerNorm → neox RoPE tail 128 with Y): a probe of the schedule, not an emitter."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SPECS = ("sweep_rms_rope_quant_f16_16384", "sweep_ln_rope_f16_12288")
# (threads, launch bound, how the re-reading pass loops over its tiles: unrolled, every tile's load in
# flight together, or serial, one tile's registers at a time)
VARIANTS = tuple((t, b, loop) for t, b in ((512, 2), (512, 3), (512, 4), (256, 4), (256, 6), (256, 8)) for loop in ("unroll", "serial"))

COMMON = '''
def fused_program(threads: int, vector: int, blocks: int, reread):
    """Two passes over the row: statistics tile by tile (a tile: one vector a thread), then each tile re-read."""
    m = T.dynamic("m")
    tile_columns = threads * vector
    tiles = HIDDEN // tile_columns
    warps = threads // 32
    last_tile = (tiles - 1) * tile_columns
    rope_in_tile = ROPE_START - last_tile  # the tail span lies in the last tile

    def tile_thread(j):
        return j // vector % threads

    def tile_index(j):
        return j % vector

    def on_tile_threads(extent, start, step=1):
        def iteration_thread(k):
            return tile_thread(start + k * step)

        return T.Fragment((extent,), forward_thread_fn=iteration_thread)

    def tile_layout():
        return T.Fragment((tile_columns,), forward_thread_fn=tile_thread, forward_index_fn=tile_index)
'''

RMS_ROPE_QUANT = (
    COMMON
    + """
    @T.prim_func
    def fused(
        X: T.Tensor((m, HIDDEN), "float16"),
        Weight: T.Tensor((HIDDEN,), "float16"),
        Cos: T.Tensor((m, ROPE_HALF), "float32"),
        Sin: T.Tensor((m, ROPE_HALF), "float32"),
        Q: T.Tensor((m, HIDDEN), "float8_e4m3fn"),
        Scale: T.Tensor((m, HIDDEN // GROUP_SIZE), "float32"),
    ):
        with T.Kernel(m, threads=threads) as block:
            T.annotate_min_blocks_per_sm(blocks)
            tile = T.alloc_fragment((tile_columns,), "float32")
            sumsq = T.alloc_fragment((tile_columns,), "float32")
            rope_partner = T.alloc_fragment((tile_columns,), "float32")
            row_abs = T.alloc_fragment((tile_columns,), "float32")
            T.annotate_layout({tile: tile_layout(), sumsq: tile_layout(), rope_partner: tile_layout(), row_abs: tile_layout()})
            rstd = T.alloc_fragment((1,), "float32")
            group_scale = T.alloc_fragment((tile_columns // GROUP_SIZE,), "float32")
            inverse_scale = T.alloc_fragment((tile_columns // GROUP_SIZE,), "float32")
            quantized = T.alloc_fragment((tile_columns,), "float8_e4m3fn")
            T.clear(sumsq)
            for k in T.unroll(tiles):
                T.copy(X[block, k * tile_columns], tile)
                for j in T.Parallel(tile_columns):
                    sumsq[j] = sumsq[j] + tile[j] * tile[j]
            sumsq_thread = T.alloc_fragment((threads,), "float32")
            T.reduce_sum(T.reshape(sumsq, (threads, vector)), sumsq_thread, dim=1)
            for t in T.Parallel(threads):
                sumsq_thread[t] = T.warp_reduce_sum(sumsq_thread[t])
            sumsq_warps = T.alloc_shared((1, warps), "float32")
            for t in T.Parallel(threads):
                if t % 32 == 0:
                    sumsq_warps[0, t // 32] = sumsq_thread[t]
            rstd[0] = sumsq_warps[0, 0]
            for w in T.serial(1, warps):
                rstd[0] = rstd[0] + sumsq_warps[0, w]
            rstd[0] = T.rsqrt(rstd[0] * (1.0 / HIDDEN) + EPS)
            # The last tile first: pass 1 read it last.
            T.copy(X[block, last_tile], tile)
            for j in T.Parallel(tile_columns):
                tile[j] = tile[j] * rstd[0] * Weight[last_tile + j]
            for p in T.Parallel(ROPE_HALF, loop_layout=on_tile_threads(ROPE_HALF, rope_in_tile, 2)):
                T.reshape(rope_partner, (tile_columns // 2, 2))[rope_in_tile // 2 + p, 0] = -T.reshape(tile, (tile_columns // 2, 2))[rope_in_tile // 2 + p, 1]
            for p in T.Parallel(ROPE_HALF, loop_layout=on_tile_threads(ROPE_HALF, rope_in_tile, 2)):
                T.reshape(rope_partner, (tile_columns // 2, 2))[rope_in_tile // 2 + p, 1] = T.reshape(tile, (tile_columns // 2, 2))[rope_in_tile // 2 + p, 0]
            for j in T.Parallel(ROPE_DIM, loop_layout=on_tile_threads(ROPE_DIM, rope_in_tile)):
                tile[rope_in_tile + j] = tile[rope_in_tile + j] * Cos[block, j // 2] + rope_partner[rope_in_tile + j] * Sin[block, j // 2]
            QUANT(last_tile)
            for k in reread(tiles - 1):
                T.copy(X[block, (tiles - 2 - k) * tile_columns], tile)
                for j in T.Parallel(tile_columns):
                    tile[j] = tile[j] * rstd[0] * Weight[(tiles - 2 - k) * tile_columns + j]
                QUANT((tiles - 2 - k) * tile_columns)

    return fused.with_attr("global_symbol", NAME)
"""
)

QUANT = """for j in T.Parallel(tile_columns):
    row_abs[j] = T.abs(tile[j])
T.reduce_max(T.reshape(row_abs, (tile_columns // GROUP_SIZE, GROUP_SIZE)), group_scale, dim=1)
for g in T.Parallel(tile_columns // GROUP_SIZE):
    group_scale[g] = T.max(group_scale[g], AMAX_FLOOR)
    group_scale[g] = T.reinterpret(T.bitwise_and(T.reinterpret(T.fma(T.fma(T.fmul(group_scale[g], FP8_MAX_RECIPROCAL), -FP8_MAX, group_scale[g]), FP8_MAX_RECIPROCAL, T.fmul(group_scale[g], FP8_MAX_RECIPROCAL)), "int32") + 8388607, 2139095040), "float32")
    inverse_scale[g] = T.call_extern("float32", "__frcp_rn", group_scale[g])
for j in T.Parallel(tile_columns):
    quantized[j] = T.cast(tile[j] * inverse_scale[j // GROUP_SIZE], "float8_e4m3fn")
T.copy(quantized, Q[block, START])
T.copy(group_scale, Scale[block, (START) // GROUP_SIZE])"""

LN_ROPE = (
    COMMON
    + """
    @T.prim_func
    def fused(
        X: T.Tensor((m, HIDDEN), "float16"),
        Weight: T.Tensor((HIDDEN,), "float16"),
        Bias: T.Tensor((HIDDEN,), "float16"),
        Cos: T.Tensor((m, ROPE_HALF), "float32"),
        Sin: T.Tensor((m, ROPE_HALF), "float32"),
        Y: T.Tensor((m, HIDDEN), "float16"),
    ):
        with T.Kernel(m, threads=threads) as block:
            T.annotate_min_blocks_per_sm(blocks)
            tile = T.alloc_fragment((tile_columns,), "float32")
            terms = T.alloc_fragment((tile_columns,), "float32")
            T.annotate_layout({tile: tile_layout(), terms: tile_layout()})
            mean = T.alloc_fragment((1,), "float32")
            rstd = T.alloc_fragment((1,), "float32")
            T.clear(terms)
            for k in T.unroll(tiles):
                T.copy(X[block, k * tile_columns], tile)
                for j in T.Parallel(tile_columns):
                    terms[j] = terms[j] + tile[j]
            EXCHANGE(terms, mean, row_sum)
            mean[0] = mean[0] * (1.0 / HIDDEN)
            T.clear(terms)
            # Centred squares from a second read (L2), last tile first: pass 1 read it last.
            for k in reread(tiles):
                T.copy(X[block, (tiles - 1 - k) * tile_columns], tile)
                for j in T.Parallel(tile_columns):
                    terms[j] = terms[j] + (tile[j] - mean[0]) * (tile[j] - mean[0])
            EXCHANGE(terms, rstd, centered_sum)
            rstd[0] = T.rsqrt(rstd[0] * (1.0 / HIDDEN) + EPS)
            for k in reread(tiles - 1):
                T.copy(X[block, k * tile_columns], tile)
                for j in T.Parallel(tile_columns):
                    tile[j] = (tile[j] - mean[0]) * rstd[0] * Weight[k * tile_columns + j] + Bias[k * tile_columns + j]
                T.copy(tile, Y[block, k * tile_columns])
            T.copy(X[block, last_tile], tile)
            for j in T.Parallel(tile_columns):
                tile[j] = (tile[j] - mean[0]) * rstd[0] * Weight[last_tile + j] + Bias[last_tile + j]
            for j in T.Parallel(ROPE_DIM, loop_layout=on_tile_threads(ROPE_DIM, rope_in_tile)):
                tile[rope_in_tile + j] = tile[rope_in_tile + j] * Cos[block, j % ROPE_HALF] + T.shfl_xor(tile[rope_in_tile + j], LANES, 32, MASK) * T.if_then_else(j < ROPE_HALF, -1.0, 1.0) * Sin[block, j % ROPE_HALF]
            T.copy(tile, Y[block, last_tile])

    return fused.with_attr("global_symbol", NAME)
"""
)

EXCHANGE = """{name}_thread = T.alloc_fragment((threads,), "float32")
T.reduce_sum(T.reshape({terms}, (threads, vector)), {name}_thread, dim=1)
for t in T.Parallel(threads):
    {name}_thread[t] = T.warp_reduce_sum({name}_thread[t])
{name}_warps = T.alloc_shared((1, warps), "float32")
for t in T.Parallel(threads):
    if t % 32 == 0:
        {name}_warps[0, t // 32] = {name}_thread[t]
{result}[0] = {name}_warps[0, 0]
for w in T.serial(1, warps):
    {result}[0] = {result}[0] + {name}_warps[0, w]"""


def expand(template: str, marker: str, body) -> str:
    """Replaces each `marker(args)` line by body(args) at its indentation."""

    def one(match: re.Match) -> str:
        indent, args = match.group(1), [a.strip() for a in match.group(2).split(",")]
        return "\n".join(indent + line for line in body(*args).splitlines())

    return re.sub(rf"^( *){marker}\((.*)\)$", one, template, flags=re.M)


def program_text(spec: str, lanes: str = "", mask: str = "") -> str:
    if spec.startswith("sweep_rms"):
        return expand(RMS_ROPE_QUANT, "QUANT", lambda start: QUANT.replace("START", start))
    text = expand(LN_ROPE, "EXCHANGE", lambda terms, result, name: EXCHANGE.format(terms=terms, result=result, name=name))
    return text.replace("LANES", lanes).replace("MASK", mask)


def main(out: Path) -> None:
    specs = out / "specs"
    specs.mkdir(parents=True, exist_ok=True)
    for spec in SPECS:
        text = (ROOT / "perf/sweep" / f"{spec}.toml").read_text().replace(f'name = "{spec}"', f'name = "{spec}_planner"')
        (specs / f"{spec}_planner.toml").write_text(text)
    (out / "none.json").write_text("{}")
    build = out / "kernels"
    subprocess.run(
        [sys.executable, "-m", "fusegen", "build", str(specs), "--out", str(build), "--tuning", str(out / "none.json")], check=True
    )
    for spec in SPECS:
        planner = build / f"{spec}_planner"
        source = (planner / "kernel.py").read_text()
        shuffle = re.search(r"T\.shfl_xor\(row\[ROPE_START \+ j\], (\d+), 32, (0x[0-9a-f]+)\)", source)
        for threads, blocks, loop in VARIANTS:
            name = f"{spec}_t{threads}_b{blocks}_{loop}"
            target = build / name
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(planner, target)
            (target / "kernel.cu").unlink(missing_ok=True)
            lanes, mask = (shuffle.group(1), shuffle.group(2)) if shuffle else ("", "")
            program = program_text(spec, lanes, mask)
            start = source.index("def fused_program(")
            end = source.index("def program_0():")
            text = source[:start] + program.lstrip("\n") + "\n\n" + source[end:]
            text = re.sub(
                r"return fused_program\(threads=\d+, vector=8\)",
                f"return fused_program(threads={threads}, vector=8, blocks={blocks}, reread=T.{loop})",
                text,
            )
            (target / "kernel.py").write_text(text)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
