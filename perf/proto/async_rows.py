"""Prototype (perf experiment, NOTES.md step 13): the fp8-only seed chain on a persistent grid whose
blocks stream rows through a two-slot shared-memory ring with cp.async, so the next row's load is in
flight while the current row reduces; optionally with rstd applied last and the sum of squares and the
amax exchanged together (one cross-warp exchange per row instead of two)."""

import tilelang.language as T

ROPE_DIM = 64


def program(N, dtype, threads, vec, grid, fused, min_blocks=1):
    m = T.dynamic("m")
    per = vec * threads
    chunks = N // per
    half = ROPE_DIM // 2
    rope0 = N - ROPE_DIM
    warps = threads // 32
    layout = dict(
        forward_thread_fn=lambda i, j: (i * N + j) // vec % threads, forward_index_fn=lambda i, j: (i * N + j) // per * vec + j % vec
    )

    @T.prim_func
    def async_rows(
        X: T.Tensor((m, N), dtype),
        Weight: T.Tensor((N,), dtype),
        Cos: T.Tensor((m, half), "float32"),
        Sin: T.Tensor((m, half), "float32"),
        Q: T.Tensor((m, N), "float8_e4m3fn"),
        Scale: T.Tensor((m, 1), "float32"),
    ):
        with T.Kernel(T.min(m, grid), threads=threads) as block:
            T.annotate_min_blocks_per_sm(min_blocks)
            x_ring = T.alloc_shared((2, N), dtype)
            cs_ring = T.alloc_shared((2, ROPE_DIM), "float32")
            row = T.alloc_fragment((1, N), "float32")
            T.annotate_layout({row: T.Fragment((1, N), **layout)})
            weight_staged = T.alloc_fragment((N,), dtype)
            T.annotate_layout(
                {
                    weight_staged: T.Fragment(
                        (N,), forward_thread_fn=lambda c: c // vec % threads, forward_index_fn=lambda c: c // per * vec + c % vec
                    )
                }
            )
            sumsq_terms = T.alloc_fragment((1, N), "float32")
            rstd = T.alloc_fragment((1,), "float32")
            sumsq_lanes = T.alloc_fragment((1, chunks, threads), "float32")
            sumsq_thread = T.alloc_fragment((1, threads), "float32")
            partials = T.alloc_shared((2, warps), "float32")
            amax_partials = T.alloc_shared((1, warps), "float32")
            rope_span = T.alloc_shared((1, ROPE_DIM), "float32")
            group_scale = T.alloc_fragment((1,), "float32")
            factor = T.alloc_fragment((1,), "float32")
            quantized = T.alloc_fragment((1, N), "float8_e4m3fn")
            amax_lanes = T.alloc_fragment((1, chunks, threads), "float32")
            amax_thread = T.alloc_fragment((1, threads), "float32")
            T.async_copy(X[block, 0:N], x_ring[0, 0:N])
            T.async_copy(Cos[block, 0:half], cs_ring[0, 0:half])
            T.async_copy(Sin[block, 0:half], cs_ring[0, half:ROPE_DIM])
            for j in T.Parallel(N):
                weight_staged[j] = Weight[j]
            for k in T.serial(T.ceildiv(m - block, grid)):
                token = block + k * grid
                slot = k % 2
                if token + grid < m:
                    T.async_copy(X[token + grid, 0:N], x_ring[1 - slot, 0:N])
                    T.async_copy(Cos[token + grid, 0:half], cs_ring[1 - slot, 0:half])
                    T.async_copy(Sin[token + grid, 0:half], cs_ring[1 - slot, half:ROPE_DIM])
                else:
                    # Every iteration commits three groups, so "all but the newest three" is this row.
                    T.ptx_commit_group()
                    T.ptx_commit_group()
                    T.ptx_commit_group()
                T.ptx_wait_group(3)
                for i, j in T.Parallel(1, N):
                    row[i, j] = x_ring[slot, j]
                for i, j in T.Parallel(1, N):
                    sumsq_terms[i, j] = row[i, j] * row[i, j]
                T.reduce_sum(T.reshape(sumsq_terms, (1, chunks, threads, vec)), sumsq_lanes, dim=3)
                T.reduce_sum(sumsq_lanes, sumsq_thread, dim=1)
                for i, t in T.Parallel(1, threads):
                    sumsq_thread[i, t] = T.warp_reduce_sum(sumsq_thread[i, t])
                if fused:
                    for i, j in T.Parallel(1, N):
                        row[i, j] = row[i, j] * weight_staged[j]
                else:
                    for i, t in T.Parallel(1, threads):
                        if t % 32 == 0:
                            partials[0, t // 32] = sumsq_thread[i, t]
                    for i in T.Parallel(1):
                        rstd[i] = partials[0, 0]
                        for w in T.serial(1, warps):
                            rstd[i] = rstd[i] + partials[0, w]
                    for i in T.Parallel(1):
                        rstd[i] = T.rsqrt(rstd[i] / N + 1e-06)
                    for i, j in T.Parallel(1, N):
                        row[i, j] = row[i, j] * rstd[i] * weight_staged[j]
                for i, j in T.Parallel(1, ROPE_DIM):
                    rope_span[i, j] = row[i, rope0 + j]
                for i, j in T.Parallel(1, ROPE_DIM):
                    row[i, rope0 + j] = (
                        rope_span[i, j] * cs_ring[slot, j % half]
                        + T.if_then_else(j < half, -rope_span[i, j + half], rope_span[i, j - half]) * cs_ring[slot, half + j % half]
                    )
                T.reduce_absmax(T.reshape(row, (1, chunks, threads, vec)), amax_lanes, dim=3)
                T.reduce_max(amax_lanes, amax_thread, dim=1)
                for i, t in T.Parallel(1, threads):
                    amax_thread[i, t] = T.warp_reduce_max(amax_thread[i, t])
                if fused:
                    for i, t in T.Parallel(1, threads):
                        if t % 32 == 0:
                            partials[0, t // 32] = sumsq_thread[i, t]
                            partials[1, t // 32] = amax_thread[i, t]
                    for i in T.Parallel(1):
                        rstd[i] = partials[0, 0]
                        group_scale[i] = partials[1, 0]
                        for w in T.serial(1, warps):
                            rstd[i] = rstd[i] + partials[0, w]
                            group_scale[i] = T.max(group_scale[i], partials[1, w])
                    for i in T.Parallel(1):
                        rstd[i] = T.rsqrt(rstd[i] / N + 1e-06)
                        group_scale[i] = T.max(group_scale[i] * rstd[i], 1e-10) / 448.0
                        factor[i] = rstd[i] * T.call_extern("float32", "__frcp_rn", group_scale[i])
                else:
                    for i, t in T.Parallel(1, threads):
                        if t % 32 == 0:
                            amax_partials[0, t // 32] = amax_thread[i, t]
                    for i in T.Parallel(1):
                        group_scale[i] = amax_partials[0, 0]
                        for w in T.serial(1, warps):
                            group_scale[i] = T.max(group_scale[i], amax_partials[0, w])
                    for i in T.Parallel(1):
                        group_scale[i] = T.max(group_scale[i], 1e-10) / 448.0
                        factor[i] = T.call_extern("float32", "__frcp_rn", group_scale[i])
                for i, j in T.Parallel(1, N):
                    quantized[i, j] = T.cast(T.clamp(row[i, j] * factor[i], -448.0, 448.0), "float8_e4m3fn")
                T.copy(quantized, Q[token, 0])
                for i in T.Parallel(1):
                    Scale[token, 0] = group_scale[i]

    return async_rows
