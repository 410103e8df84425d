"""Prototype (perf experiment, see NOTES.md): the fp8-only seed chain on a persistent grid, each block
prefetching its next row into registers before computing the current one."""

import importlib

import tilelang.language as T

from fusegen.runtime import Launcher

base = importlib.import_module("generated.rms_norm_rope_quant_fp8_only.kernel")

N = 4096


def program(threads=256, grid_blocks=132 * 4, vec=8, min_blocks=1, persistent=True):
    m = T.dynamic("m")
    per = vec * threads

    @T.prim_func
    def persistent_fp8(
        X: T.Tensor((m, N), "float16"),
        Weight: T.Tensor((N,), "float16"),
        Cos: T.Tensor((m, 32), "float32"),
        Sin: T.Tensor((m, 32), "float32"),
        Q: T.Tensor((m, N), "float8_e4m3fn"),
        Scale: T.Tensor((m, 1), "float32"),
    ):
        with T.Kernel(T.min(m, grid_blocks) if persistent else m, threads=threads) as block:
            T.annotate_min_blocks_per_sm(min_blocks)
            row = T.alloc_fragment((1, N), "float32")
            staged = T.alloc_fragment((1, N), "float16")
            T.annotate_layout(
                {
                    row: T.Fragment(
                        (1, N),
                        forward_thread_fn=lambda i, j: (i * N + j) // vec % threads,
                        forward_index_fn=lambda i, j: (i * N + j) // per * vec + j % vec,
                    ),
                    staged: T.Fragment(
                        (1, N),
                        forward_thread_fn=lambda i, j: (i * N + j) // vec % threads,
                        forward_index_fn=lambda i, j: (i * N + j) // per * vec + j % vec,
                    ),
                }
            )
            sumsq_terms = T.alloc_fragment((1, N), "float32")
            rstd = T.alloc_fragment((1,), "float32")
            rope_span = T.alloc_shared((1, 64), "float32")
            group_scale = T.alloc_fragment((1,), "float32")
            inverse_scale = T.alloc_fragment((1,), "float32")
            quantized = T.alloc_fragment((1, N), "float8_e4m3fn")
            T.copy(X[block, 0], staged)
            stride = grid_blocks if persistent else m
            for k in T.serial(T.ceildiv(m - block, stride)):
                token = block + k * stride
                for i, j in T.Parallel(1, N):
                    row[i, j] = staged[i, j]
                if token + stride < m:
                    T.copy(X[token + stride, 0], staged)
                for i, j in T.Parallel(1, N):
                    sumsq_terms[i, j] = row[i, j] * row[i, j]
                T.reduce_sum(sumsq_terms, rstd, dim=1)
                for i in T.Parallel(1):
                    rstd[i] = T.rsqrt(rstd[i] / N + 1e-06)
                for i, j in T.Parallel(1, N):
                    row[i, j] = row[i, j] * rstd[i] * Weight[j]
                for i, j in T.Parallel(1, 64):
                    rope_span[i, j] = row[i, 4032 + j]
                for i, j in T.Parallel(1, 64):
                    row[i, 4032 + j] = (
                        rope_span[i, j] * Cos[token, j % 32]
                        + T.if_then_else(j < 32, -rope_span[i, j + 32], rope_span[i, j - 32]) * Sin[token, j % 32]
                    )
                T.reduce_absmax(row, group_scale, dim=1)
                for i in T.Parallel(1):
                    group_scale[i] = T.max(group_scale[i], 1e-10) / 448.0
                    inverse_scale[i] = T.call_extern("float32", "__frcp_rn", group_scale[i])
                for i, j in T.Parallel(1, N):
                    quantized[i, j] = T.cast(T.clamp(row[i, j] * inverse_scale[i], -448.0, 448.0), "float8_e4m3fn")
                T.copy(quantized, Q[token, 0])
                for i in T.Parallel(1):
                    Scale[token, 0] = group_scale[i]

    return persistent_fp8


def launcher(**schedule):
    return Launcher(
        "persistent_fp8",
        str(schedule),
        ((1, None, lambda: program(**schedule)),),
        base.TARGET,
        base.INPUTS,
        base.OUTPUTS,
        base.Outputs,
        None,
    )
