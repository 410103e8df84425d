"""Can any kernel move a short chain's bytes at the copy ceiling when there are only ~40–80 MB of them?

Issue 14's Qwen3 k (1024 bf16 columns) and MLA kv_a (576) chains run 12–20 µs at 16384 tokens. This times
torch's own copy of exactly that row shape (x read, y written: the bulk of those chains' ledger) the way
`fusegen bench` times kernels — CUDA-graph replays of back-to-back calls, inputs rotated past 3× L2 — at
the token counts the chains were measured at, against the copy ceiling of the same run. Run on the GPU:
    python perf/proto/short_rows.py
"""

import statistics

import torch

from fusegen.bench import copy_ceiling, time_graph

L2_BYTES = 60 * 2**20
SHAPES = [(16384, 1024), (65536, 1024), (16384, 576), (116508, 576), (16384, 4096), (16384, 2880), (23301, 2880)]

ceiling = copy_ceiling()
print(f"copy ceiling {ceiling:.3f} TB/s")
for tokens, columns in SHAPES:
    moved = 2 * tokens * columns * 2
    sets = [
        (torch.randn(tokens, columns, device="cuda").to(torch.bfloat16), torch.empty(tokens, columns, device="cuda", dtype=torch.bfloat16))
        for _ in range(max(2, -(-3 * L2_BYTES // moved)))
    ]
    us = statistics.median(time_graph(lambda x, y: y.copy_(x), sets))
    print(f"copy of ({tokens}, {columns}) bf16: {moved / 1e6:.1f} MB in {us:.2f} µs = {moved / us / 1e6 / ceiling:.3f} × copy ceiling")
