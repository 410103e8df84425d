"""How fast can a one-pass row kernel move exactly a chain's ledger bytes, doing no arithmetic?

A Triton kernel per row pattern reads X (and, for RoPE, the token's cos/sin), writes Y if the chain
writes it, the row cast to fp8 and one float per row: the bytes of RMSNorm → RoPE → FP8 with and
without Y, with no reduction, rotation or scaling. Its bandwidth, against the copy ceiling of the same
run, bounds what the fused kernel of that pattern can reach (NOTES.md step 15). Timed like `fusegen
bench`: CUDA-graph replays, inputs cycled past 3× L2. Run on the GPU machine:
    python perf/proto/traffic_floor.py
"""

import statistics

import torch
import triton
import triton.language as tl

from fusegen.bench import copy_ceiling, time_graph

L2_BYTES = 60 * 2**20
TOKENS = 16384
ROPE_PAIRS = 32


@triton.jit
def move_row(
    x, cos, sin, y, q, scale, hidden: tl.constexpr, block: tl.constexpr, pairs: tl.constexpr, write_y: tl.constexpr, quantize: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, block)
    inside = cols < hidden
    values = tl.load(x + row * hidden + cols, mask=inside)
    if write_y:
        tl.store(y + row * hidden + cols, values, mask=inside)
    if quantize:
        pair = tl.arange(0, pairs)
        # cos/sin are read (their bytes are in the ledger) and folded into the scale so the loads stay.
        angle = tl.sum(tl.load(cos + row * pairs + pair) + tl.load(sin + row * pairs + pair))
        tl.store(q + row * hidden + cols, values.to(tl.float8e4nv), mask=inside)
        tl.store(scale + row, angle)


# name: (writes Y, reads cos/sin and writes Q and the scale). "row copy" calibrates the kernel itself.
PATTERNS = {"row copy": (True, False), "with Y": (True, True), "fp8 only": (False, True)}


def pattern_time(dtype, hidden: int, write_y: bool, quantize: bool, num_warps: int) -> tuple[float, int]:
    row_bytes = hidden * dtype.itemsize * (2 if write_y else 1) + (hidden + 2 * ROPE_PAIRS * 4 + 4 if quantize else 0)
    moved = row_bytes * TOKENS
    sets = []
    for _ in range(max(1, -(-3 * L2_BYTES // moved))):
        sets.append(
            (
                torch.randn(TOKENS, hidden, device="cuda").to(dtype),
                torch.rand(TOKENS, ROPE_PAIRS, device="cuda"),
                torch.rand(TOKENS, ROPE_PAIRS, device="cuda"),
                torch.empty(TOKENS, hidden, device="cuda", dtype=dtype),
                torch.empty(TOKENS, hidden, device="cuda", dtype=torch.float8_e4m3fn),
                torch.empty(TOKENS, device="cuda"),
            )
        )

    def launch(x, cos, sin, y, q, scale):
        move_row[(TOKENS,)](
            x, cos, sin, y, q, scale, hidden, triton.next_power_of_2(hidden), ROPE_PAIRS, write_y, quantize, num_warps=num_warps
        )

    x, cos, sin, y, q, scale = sets[0]
    q.view(torch.uint8).fill_(0x7F)  # e4m3fn NaN: every element must be overwritten
    launch(*sets[0])
    torch.cuda.synchronize()
    if quantize:
        moved_q = q.float()
        assert not moved_q.isnan().any(), "a Q element was not written"
        assert torch.equal(moved_q.sign()[x.abs() > 0.01], x.float().sign()[x.abs() > 0.01]), "Q is not the row"
    if write_y:
        assert torch.equal(y, x), "Y was not moved"
    return statistics.median(time_graph(launch, sets, calls=32, replays=30)), moved


def main():
    ceiling = copy_ceiling()
    print(f"copy ceiling {ceiling:.2f} TB/s ({torch.cuda.get_device_name()})")
    print("| pattern | dtype | hidden | warps | µs | TB/s | × copy |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, (write_y, quantize) in PATTERNS.items():
        for dtype in (torch.bfloat16, torch.float16):
            for hidden in (4096, 7168):
                for warps in (4, 8, 16):
                    us, moved = pattern_time(dtype, hidden, write_y, quantize, warps)
                    bandwidth = moved / us / 1e6
                    print(
                        f"| {name} | {str(dtype)[6:]} | {hidden} | {warps} | {us:.1f} | {bandwidth:.2f} | {bandwidth / ceiling:.3f} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
