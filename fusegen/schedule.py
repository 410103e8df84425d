"""The schedule search: how a block covers a row (threads, vector width, padding, rows per block), the
variant (fragment, stream, naive, splitk) and its resources (blocks per SM, ring depth), prefetch and the
joint reduction — each choice from the spec's hints, the row size and the SM's budgets, with the reason
it was made. plan.py builds stages, routes, buffers and the ledger around the schedule chosen here."""

from __future__ import annotations

import math
from dataclasses import replace

from .errors import ChainError
from .model import DTYPE_BYTES, HOPPER_SMS, MAX_TOKENS, WARP_LANES, Reduction, RowWaits, Schedule, Stage, Tensor, reduces_within_lanes
from .ops import NORMALIZE, REGISTRY, joint_chain
from .spec import KernelSpec, ScheduleHints, chain_context

# A block is any whole number of warps up to 1024 threads.
WARP_THREADS = WARP_LANES
THREAD_CHOICES = tuple(range(WARP_THREADS, 1025, WARP_THREADS))
POWER_OF_TWO_THREADS = (32, 64, 128, 256, 512, 1024)
# fp32 row elements one thread may hold: ~2 registers each with the x² scratch, so 64 keeps a thread
# under ~160 registers with no spills.
HARD_ELEMS_PER_THREAD = 64
# Rows that share a block's threads (rows_share_threads) hold one copy of the per-column inputs and one set of
# indices for all their rows, so more values fit: ptxas (nvcc 13.0, sm_90a) kept 96 values a thread of four
# bf16 2880-column LayerNorm → FP8 rows in 165 registers without a spill (perf/probe109's census).
SHARED_ROWS_ELEMS_PER_THREAD = 112
# Elements per thread that measured best (H200, bf16, 4096 × 16384, NOTES.md): 128 threads holding 32
# each ran RMSNorm at 3.84 TB/s and RMSNorm → RoPE at 3.73, against 3.15 and 3.08 with 256 threads
# holding 16. TileLang's block reduction exchanges through shared memory once per halving above a warp
# (two barriers each), so fewer, fuller threads pay fewer barriers per row.
TARGET_ELEMS_PER_THREAD = 32
MIN_GOOD_ELEMS_PER_THREAD = 24
# A layout that leaves a thread fewer 16-byte vectors than this ranks below any other the padding allows: the
# row's fixed costs (a warp's shuffles and the block's barrier per reduction, the gathered loads) are paid
# by more warps for fewer values each. Timed on the H200 (perf/probe24, 16384 tokens): at 6656 columns,
# which 416 threads cover whole in two vectors each, QK-norm → cache RoPE, cache RoPE and RMSNorm → RoPE →
# FP8 ran 0.54–0.60 × copy, and 0.79–0.97 on 128 threads × seven vectors with the row padded to 7168 (six
# of seven chains faster; LayerNorm → RoPE → FP8 bf16 0.55 → 0.39, its seven vectors, weight and bias
# taking 189 registers). Three are enough: at 2304, 96 threads × three vectors beat 64 × five padded by
# 9–60 % on three of four chains and tied on the fourth.
MIN_GOOD_VECTORS_PER_THREAD = 3
# A row on a group of a warp's lanes (rows sharing warps) pays no barrier and no exchange per reduction, only
# a few shuffles among its lanes, so the fixed costs that favour full threads above are small there; what
# counts is how many loads an SM keeps in flight. Timed on the H200 (perf/probe50, at the sweep's counts):
# 64-column 16-bit rows, 16 a block, on four lanes holding 16 values each ran 0.97–1.04 × copy, on two
# holding 32 0.82–0.97 (add → LayerNorm with Y 0.83 → 0.98, add → rescale → RoPE → FP8 0.82 → 1.04), on
# eight holding 8 0.88–1.05 (slower than four on three of the four). Held out, 16 values against 32 on
# twelve 16-bit chains of 64–240 columns: seven faster by 6–91 %, four slower by 1–4.5 %, one even.
# float32 rows, planned at 16 values a lane before, ran 0.99–1.55 × copy; at 8 (the same bytes a lane as
# the 16-bit winners) within 1 % on four and 15 % slower on one: the target is in values, not bytes.
SHARED_WARP_ELEMS_PER_THREAD = 16
# A row may be padded by up to 1 / MAX_PADDING_SHARE of its width to keep 16-byte accesses.
MAX_PADDING_SHARE = 8
SHARED_BYTES_LIMIT = 48 * 1024
MAX_BLOCK_M = 16
# Side inputs loaded before the first reduction: their latency (a DRAM round trip for cos/sin, an L2
# one for weight) overlaps the row's instead of following a barrier (NOTES.md step 9).
DEFAULT_PREFETCH = True


def power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _checked_hint(value, key: str, allowed: tuple[int, ...], described: str | None = None) -> int | None:
    if value == "auto":
        return None
    if value not in allowed:
        raise ChainError(key, f'must be "auto" or {described or "one of " + ", ".join(map(str, allowed))}, got {value}')
    return value


def thread_counts(spec: KernelSpec) -> tuple[int, ...]:
    """Thread counts worth considering: the powers of two, and every whole number of warps that covers
    the row in 16-byte vectors exactly (7168 fp16 = 896 vectors: 224, 448, 896 threads), which a power
    of two would cover only with narrower vectors or padding."""
    per_vector = 16 // DTYPE_BYTES[spec.dtype]
    vectors = spec.hidden // per_vector if spec.hidden % per_vector == 0 else 0
    exact = {t for t in THREAD_CHOICES if vectors and vectors % t == 0}
    return tuple(sorted(set(POWER_OF_TWO_THREADS) | exact))


def narrow_row(spec: KernelSpec) -> bool:
    """Whether a row has fewer 16-byte vectors than a warp has lanes: on a warp of its own it would leave
    lanes idle (or pad to a warp's vectors), so the rows of a block may share warps (model.Layout)."""
    return spec.hidden * DTYPE_BYTES[spec.dtype] < WARP_THREADS * 16


def one_vector_row_sharing(spec: KernelSpec) -> list[str]:
    """Why the chain's ops ask a row of one warp's 16-byte vectors to share warps (ONE_VECTOR_ROW_BYTES,
    ops.Op.shares_one_vector_rows); empty where none does, or the row is of another width."""
    if spec.hidden * DTYPE_BYTES[spec.dtype] != ONE_VECTOR_ROW_BYTES:
        return []
    context = chain_context(spec)
    return [why for op in spec.op if (why := REGISTRY[op.kind].shares_one_vector_rows(op, context))]


def rows_share_warps(spec: KernelSpec) -> bool:
    """Whether the rows of a block may take part of a warp each (model.Layout): narrow rows, and rows of one
    warp's 16-byte vectors whose ops ask it."""
    return narrow_row(spec) or bool(one_vector_row_sharing(spec))


def row_threads_allowed(threads: int, block_m: int, share_warps: bool) -> bool:
    """Whether `threads` give each of `block_m` rows threads of its own: whole warps, or, where rows may
    share warps, a power-of-two group of a warp's lanes (a row's shuffles then stay inside its group)."""
    if threads % WARP_THREADS or threads % block_m:
        return False
    row_threads = threads // block_m
    return row_threads % WARP_THREADS == 0 or (share_warps and power_of_two(row_threads))


def _row_layout_pinned(hints: ScheduleHints) -> bool:
    """Whether the hints fix the row layout a default rule would otherwise choose: a variant other than the
    fragment program, or its threads, rows a block or row split."""
    return hints.variant not in ("auto", "fragment") or any(
        value != "auto" for value in (hints.threads, hints.block_m, hints.row_split, hints.rows_share_threads)
    )


def _layout_refusals(spec: KernelSpec, context, vector: int, row_threads: int) -> list[str]:
    """What the chain's ops say against a row layout of `vector`-element vectors on `row_threads` threads
    (ops.Op.layout_refusal), each as "<op>: <why>"; empty where every op takes it."""
    return [f"{op.kind}: {why}" for op in spec.op if (why := REGISTRY[op.kind].layout_refusal(op, context, vector, row_threads))]


def _why_not_16_byte_vectors(spec: KernelSpec, context, n: int, unit: str, row_threads: int, candidates: list) -> str:
    """Why _row_schedule's `unit` (a row, or a part of a split row) of `n` columns took narrower vectors than
    16 bytes: a 16-byte vector would straddle two of them, an op refuses them, or every layout offering them
    pads the row by more than the share the ranking pays for them (candidates: _row_schedule's, (key,
    threads, vector, padded, values))."""
    wide = 16 // DTYPE_BYTES[spec.dtype]
    if n % wide:
        return f"a 16-byte vector ({wide} columns) would straddle two {unit}s: {n} is not a multiple of {wide}"
    refusals = _layout_refusals(spec, context, wide, row_threads)
    if refusals:
        return f"16-byte vectors on {row_threads} threads: {'; '.join(refusals)}"
    padded = [(padded, threads) for _, threads, vector, padded, _ in candidates if vector == wide]
    if padded:
        least, threads = min(padded)
        return (
            f"16-byte vectors would pad the {unit} past an eighth more columns on every thread count tried "
            f"(the least: {least} columns on {threads} threads)"
        )
    return f"16-byte vectors would hold more than {HARD_ELEMS_PER_THREAD} values a thread on every thread count tried"


# A row layout on hinted threads ends its first reason so; the build's trial on a stream's threads
# (plan.over_stream_trials) plans through the hint and says its own reason in its place.
THREADS_HINT_REASON = "as the threads hint asks"


def _row_schedule(
    spec: KernelSpec,
    block_m: int,
    threads_hint: int | None,
    multiple: int,
    row_split: int = 1,
    split_by: str = "the row_split hint",
    threads_by: str = THREADS_HINT_REASON,
    share_warps: bool = False,
    min_threads: int = WARP_THREADS,
    shared_threads: bool = False,
) -> Schedule:
    """Picks threads and vector width for a row held in registers, padding the row where hidden needs it
    (to a whole number of row tiles: the threads of one block row × vector). A row split over `row_split`
    blocks is scheduled as one part of it: a row of hidden / row_split columns (`split_by` says who asked;
    `threads_by` why `threads_hint` is the thread count). `share_warps`: block rows may take part of a
    warp each (row_threads_allowed). `min_threads`: the fewest threads a block may take (wave_threads).
    `shared_threads`: every row of a block on all of its threads (model.Layout.shared_threads)."""
    elem = DTYPE_BYTES[spec.dtype]
    # The groups of threads a block's rows are laid out on: one a row, or one holding every row (rows_share_threads)
    own_rows = 1 if shared_threads else block_m
    most_values = SHARED_ROWS_ELEMS_PER_THREAD if shared_threads else HARD_ELEMS_PER_THREAD
    n = spec.hidden // row_split
    context = chain_context(spec)
    candidates = []

    def offer(threads: int) -> None:
        if threads < min_threads or not row_threads_allowed(threads, own_rows, share_warps):
            return  # every block row takes threads of its own (model.Layout)
        vector = 16 // elem
        while vector >= 1:
            tile = threads // own_rows * vector  # the row tile: one block row's threads × vector
            if tile % multiple and not power_of_two(threads):
                # A quantisation group would straddle the wrap from the last thread back to the first.
                # The GPU matrix runs group quantisation on power-of-two tiles only, so other thread
                # counts are offered only where groups tile them evenly.
                vector //= 2
                continue
            step = tile * multiple // math.gcd(tile, multiple)
            padded = -(-n // step) * step
            per_thread = block_m * padded // threads
            # A vector must not straddle rows (every row starts at a multiple of hidden elements), and
            # every op must be able to work on it.
            usable = n % vector == 0 and not _layout_refusals(spec, context, vector, threads // own_rows)
            if per_thread <= most_values and usable:
                sharing = threads // own_rows < WARP_THREADS
                target = SHARED_WARP_ELEMS_PER_THREAD if sharing else TARGET_ELEMS_PER_THREAD
                key = (
                    vector * elem < 8,  # below 8-byte accesses the loads stop saturating HBM
                    # Padding costs registers and idle lanes, not DRAM bytes (masked): up to an eighth of the
                    # row is worth paying for 16-byte accesses, which come next, however many values per
                    # thread they take (up to the hard limit). Hidden 5120 RMSNorm → RoPE → FP8 g128 ran at
                    # 0.62 × copy on 256 threads × 8-byte vectors (issue 16), and at 7168 LayerNorm on 128
                    # threads × 16-byte vectors beat 256 × 8-byte by 7 % (115.5 against 123.5 µs,
                    # docs/bench/tune/tune.json), RMSNorm and RoPE within 1 %.
                    padded - n > n // MAX_PADDING_SHARE,
                    vector * elem < 16,
                    not sharing and per_thread * elem < MIN_GOOD_VECTORS_PER_THREAD * 16,
                    padded - n,
                    # Among equally padded candidates, whole warps in powers of two. Measured (NOTES.md step
                    # 11): at 7168, 224 threads × 16-byte vectors ran RMSNorm as fast as 256 × 8-byte, and the
                    # RoPE and LayerNorm chains 25–40 % slower. A row only a padded power of two covers goes to
                    # a count that covers it whole (issue 16, session 12's full tune: LayerNorm 3840 on 96
                    # threads 62.9 µs at 16384 tokens against 75.3 on 128 padded to 4096, and 160 threads at 8
                    # and 256 tokens; docs/bench/tune/tune-s12-check.json).
                    not power_of_two(threads),
                    # Wide rows: a block size that leaves room for only one block per SM starves it (MLA q_b,
                    # 24576 bf16 columns: 1024 threads 0.80 × copy, 768 0.80, both one block per SM; 512 and
                    # 384 threads with a launch bound of two 0.98 and 0.99; docs/bench/sweep/ab.md).
                    not fits_two_blocks(per_thread + REGISTERS_BESIDE_ROW, threads),
                    # Few values per thread are what measured slow, many (up to the hard limit) were not: at
                    # 4096, 256 threads × 16 values ran 5–25 % and 512 × 8 1.3–2× slower than 128 × 32, while
                    # 64 × 64 was within 2 %; at 7168, 512 × 14 ran 1.05–1.6× slower than 128 × 56
                    # (docs/bench/tune/*.json, 16384 tokens).
                    not sharing and per_thread < MIN_GOOD_ELEMS_PER_THREAD,
                    abs(math.log2(per_thread / target)),
                    -vector,
                    threads,
                )
                candidates.append((key, threads, vector, padded, per_thread))
            vector //= 2

    counts = (threads_hint,) if threads_hint else thread_counts(spec)
    for threads in counts:
        offer(threads)

    def full_vectors(candidate) -> bool:
        """Whether a candidate has 16-byte vectors and three of them a thread (its key's third and fourth terms)."""
        return not any(candidate[0][2:4])

    if not threads_hint and candidates and not full_vectors(min(candidates)):
        # Rows no tried count lays out in three 16-byte vectors a thread (16-bit 4352 = 17 × 256 columns: 544
        # threads × one vector, the powers of two padding it by more than an eighth; 2176 on 8-byte vectors)
        # may take any whole number of warps that covers them padded: bf16 RMSNorm → FP8 4352 on 192 threads
        # padded to 4608 ran 0.89 × copy against 0.46, fp16 RMSNorm → RoPE → FP8 0.82 against 0.42. Of 26
        # held-out rows it moved (perf/probe59, 16384 tokens), 15 ran faster by 2 % to 1.96 ×, 5 within 1 %,
        # 4 slower by 1.5–5 % (RMSNorm → RoPE → FP8 2176 0.96 → 0.91, RMSNorm → cache RoPE 5248 0.95 →
        # 0.91), 2 by 12–15 % under launch bounds that spilled (FILLED_SM_MIN_REGISTERS). Only the counts
        # that do give three 16-byte vectors are taken (bf16 2688 keeps 8-byte vectors: 0.97).
        offered = len(candidates)
        for threads in THREAD_CHOICES:
            if threads not in counts:
                offer(threads)
        candidates[offered:] = [c for c in candidates[offered:] if full_vectors(c)]
    if not candidates:
        if any(REGISTRY[op.kind].pads_to_whole_heads(op, context) for op in spec.op) and not threads_hint:
            raise ChainError(
                "head_dim",
                f"no thread layout holds this chain's heads of {spec.head_dim} columns in a row of {n}: a per-head norm pads the row "
                "to whole heads and whole row tiles (a power of two of threads from 32, or a count of warps covering the row in "
                f"16-byte vectors, × 1, 2, 4 or 8 columns), which these heads take past {most_values} values a thread "
                "(head sizes such as 64, 80, 96, 128, 192, 256 fit)",
            )
        where = f"with threads = {threads_hint}" if threads_hint else f"even with {THREAD_CHOICES[-1]} threads"
        remedies = [
            *(["more threads"] if threads_hint and threads_hint < THREAD_CHOICES[-1] else []),
            *(["fewer rows a block (block_m)"] if block_m > 1 else []),
        ]
        raise ChainError(
            "schedule.threads" if threads_hint else "hidden",
            f"a row of {n} × block_m {block_m} does not fit in registers {where} (at most {most_values} elements per thread)"
            + (f": take {' or '.join(remedies)}" if remedies else ""),
        )
    _, threads, vector, padded, per_thread = min(candidates)
    if threads_hint:
        why = threads_by
    elif min_threads > WARP_THREADS:
        why = (
            f"closest to the {TARGET_ELEMS_PER_THREAD} per thread among {min_threads} threads or more: up to {WAVE_TOKENS} tokens every "
            "row runs at once, so the kernel takes one row's time, which fewer warps would leave with one warp a scheduler"
        )
    elif threads // own_rows < WARP_THREADS:
        why = f"closest to {SHARED_WARP_ELEMS_PER_THREAD} values a lane: a row sharing a warp pays no barrier, only a few shuffles, so more of its lanes keep more loads in flight"
    else:
        why = f"closest to the {TARGET_ELEMS_PER_THREAD} per thread that keeps several loads in flight without crowding registers"
    # Where the block's rows share the threads, a thread holds each of them: a row's vectors, block_m times over.
    rows_held = f", {per_thread // vector} for the block's {block_m} rows" if shared_threads and block_m > 1 else ""
    row_vectors = (per_thread // block_m if rows_held else per_thread) // vector
    reasons = [
        f"{threads} threads × {vector}-element vectors ({vector * elem} B) cover the {'part' if row_split > 1 else 'row'} in "
        f"{row_vectors} vector(s) per thread{rows_held} ({per_thread} fp32 values), {why}",
    ]
    if row_split > 1:
        reasons.append(
            f"each row split over {row_split} blocks ({split_by}), block p holding columns [p·{n}, (p + 1)·{n}): "
            f"{row_split} times the blocks of one row per block, no op reducing across the parts"
        )
    if block_m > 1 and shared_threads:
        reasons.append(
            f"{block_m} rows per block, all on the block's {threads} threads: a thread holds the same columns of every row, "
            "widens each per-column input once for all of them, and the rows' reductions run side by side, each reduction one "
            "exchange for all the rows (as the rows_share_threads hint asks)"
        )
    elif block_m > 1:
        row_threads = threads // block_m
        own = (
            f"{row_threads} lanes of a warp, {WARP_THREADS // row_threads} rows a warp"
            if row_threads < WARP_THREADS
            else f"{row_threads // WARP_THREADS} warp(s)"
        )
        among = "lanes (shuffles, no exchange across warps)" if reduces_within_lanes(row_threads, block_m) else "warps"
        reasons.append(
            f"{block_m} rows per block, each on {row_threads} threads ({own}) of its own: a thread holds one row's values, and a "
            f"row's reductions stay among its {among}"
        )
    if padded != n:
        reasons.append(
            f"{'a part of ' if row_split > 1 else 'hidden '}{n} is not a multiple of {threads // own_rows}×{vector}"
            + (f" and the group size {multiple}" if multiple > 1 else "")
            + f": the {'part' if row_split > 1 else 'row'} is padded to {padded} columns; padding loads are masked to 0 and stores are masked"
        )
        whole = [c for c in candidates if c[3] == n and c[2] == vector]
        if whole:
            _, whole_threads, _, _, whole_values = min(whole)
            reasons.append(
                f"{whole_threads} threads would cover the {'part' if row_split > 1 else 'row'} whole, but with "
                f"{whole_values * elem} bytes a thread, under the {MIN_GOOD_VECTORS_PER_THREAD} 16-byte vectors that "
                "carry a row's reductions and barriers"
            )
    if vector * elem < 16:
        narrower = _why_not_16_byte_vectors(spec, context, n, "part" if row_split > 1 else "row", threads // own_rows, candidates)
        reasons.append(f"{narrower}; {vector * elem}-byte vectors used")
    return Schedule(
        variant="fragment",
        block_m=block_m,
        threads=threads,
        vector_elems=vector,
        vector_bytes=vector * elem,
        padded_hidden=padded,
        elems_per_thread=per_thread,
        blk_k=None,
        prefetch=False,
        joint_reduction=False,
        register_estimate=2 * per_thread + 32,
        reasons=tuple(reasons),
        row_split=row_split,
        rows_share_threads=shared_threads and block_m > 1,
    )


def _splitk_schedule(spec: KernelSpec, block_m: int, threads_hint: int | None, blk_k_hint) -> Schedule:
    elem = DTYPE_BYTES[spec.dtype]
    vector = 16 // elem
    # Each block row takes threads / block_m of the threads (model.Layout): a chunk of a row is a whole
    # number of their tiles.
    least = WARP_THREADS * block_m
    if blk_k_hint == "auto":
        threads = threads_hint or max(256, least)
        while not threads_hint and threads > least and threads // block_m * vector > spec.hidden:
            threads //= 2
        tile = threads // block_m * vector
        if threads > least and tile > spec.hidden:  # a hint: the planner's own count stops at the row's width
            fitting = max(least, spec.hidden // vector * block_m // least * least)
            raise ChainError(
                "schedule.threads",
                f"variant splitk reads a row {tile} columns a tile on {threads} threads ({vector}-element vectors), wider "
                f'than the {spec.hidden}-column row: take at most {fitting} threads, or leave it "auto"',
            )
        blk_k = min(tile * 2, -(-spec.hidden // tile) * tile)
    else:
        blk_k = blk_k_hint
        # A chunk may pad the row as "auto"'s does (one chunk of two tiles over a row of more than one: 1024 columns
        # over 768; one warp's vectors over a shorter row), so that a tuning winner that recorded it builds again.
        widest = max(2 * spec.hidden - 1, WARP_THREADS * vector)
        if not isinstance(blk_k, int) or blk_k < 32 or blk_k % 32 or blk_k > widest:
            raise ChainError(
                "schedule.blk_k",
                f'must be "auto" or a multiple of 32 from 32 to {widest // 32 * 32} (under twice hidden, {spec.hidden}, or one '
                f"warp's 16-byte vectors, {WARP_THREADS * vector}), got {blk_k}",
            )
        threads = threads_hint or max(least, min(256, blk_k // vector))
    if threads % least:
        raise ChainError(
            "schedule.threads",
            f"with block_m = {block_m} every row of a block takes whole warps of its own: {threads} threads (from blk_k {blk_k}) "
            f"are not a multiple of {least}; set threads",
        )
    row_threads = threads // block_m
    # A vector must not straddle rows, which start every hidden elements, nor a chunk's row tile.
    while vector > 1 and (blk_k % (row_threads * vector) or spec.hidden % vector):
        vector //= 2
    if blk_k % row_threads:
        raise ChainError("schedule.blk_k", f"must be a multiple of the threads of one block row = {row_threads}, got {blk_k}")
    per_thread = block_m * blk_k // threads
    if per_thread > HARD_ELEMS_PER_THREAD:
        raise ChainError(
            "schedule.blk_k",
            f"blk_k {blk_k} × block_m {block_m} over {threads} threads exceeds {HARD_ELEMS_PER_THREAD} elements per thread: "
            f"take blk_k at most {HARD_ELEMS_PER_THREAD * threads // block_m // 32 * 32}"
            + (" or more threads" if threads < THREAD_CHOICES[-1] else ""),
        )
    chunks = -(-spec.hidden // blk_k)
    return Schedule(
        variant="splitk",
        block_m=block_m,
        threads=threads,
        vector_elems=vector,
        vector_bytes=vector * elem,
        padded_hidden=chunks * blk_k,
        elems_per_thread=per_thread,
        blk_k=blk_k,
        prefetch=False,
        joint_reduction=False,
        register_estimate=2 * per_thread + 32,
        reasons=(
            f"{chunks} chunks of {blk_k} columns: only one chunk is in registers at a time, x is read twice "
            "(sum of squares, then scale), the second pass in reverse chunk order so it starts on cached data",
        ),
    )


def with_prefetch(spec: KernelSpec, schedule: Schedule, side_inputs: tuple[Tensor, ...], after_gather: tuple[Reduction, ...]) -> Schedule:
    """`after_gather`: the reductions that follow the stage reading a gathered row."""
    hint = spec.schedule.prefetch
    if not schedule.builds_row or schedule.variant == "reread":
        if hint is True:
            raise ChainError(
                "schedule.prefetch", f'applies to the "fragment" and "stream" variants only; this kernel is "{schedule.variant}"'
            )
        return schedule
    prefetch = DEFAULT_PREFETCH if hint == "auto" else hint
    if not prefetch or not side_inputs:
        return schedule
    if hint == "auto" and (why := _gathered_where_used(spec, schedule, side_inputs, after_gather)):
        return replace(schedule, reasons=schedule.reasons + (why,))
    how = (
        "per-column ones into registers in the row's layout once per block, per-token ones through the ring with the row"
        if schedule.variant == "stream"
        else "per-column ones into registers in the row's layout, per-token ones into shared memory, so their latency overlaps the row load"
    )
    return replace(
        schedule,
        prefetch=True,
        register_estimate=schedule.register_estimate + _staged_per_thread(schedule, side_inputs),
        reasons=schedule.reasons + (f"{STAGED_REASON}: {how}",),
    )


STAGED_REASON = "side inputs are loaded next to the row, before the first reduction"


def _staged_per_thread(schedule: Schedule, side_inputs: tuple[Tensor, ...]) -> int:
    """The values a thread holds of the per-column side inputs staged (each thread holds its row's columns:
    model.Layout), which with_prefetch adds to the register estimate."""
    return sum(1 for t in side_inputs if t.per_column) * schedule.columns_per_thread


def _unstaged(schedule: Schedule, side_inputs: tuple[Tensor, ...]) -> Schedule:
    """`schedule` as with_prefetch would have left it with the side inputs read where used: estimate and reasons
    too, so a plan says what its program does (and a tuned build of it, planned from its hints, says the same)."""
    if not schedule.prefetch:
        return schedule
    return replace(
        schedule,
        prefetch=False,
        register_estimate=schedule.register_estimate - _staged_per_thread(schedule, side_inputs),
        reasons=tuple(r for r in schedule.reasons if not r.startswith(STAGED_REASON)),
    )


# A table row gathered at the token's position (RoPE's cos_sin_cache) is loaded only once the position has
# come: staged, its copy into shared memory sits before the row's first barrier, which then holds the row
# for both loads in turn. Read where used, it costs two loads a rotated value: cheap where one span reads
# the row, dear where every head does. Timed on the H200 (perf/probe27, 16384 tokens, 3072–10240 columns,
# staged against read where used on the same threads): RMSNorm → cache RoPE over one 64-column span ran
# 0.78–0.85 × copy staged and 0.89–0.97 read where used in fp16 and bf16 (fp32 within 1 %); QK-norm → cache
# RoPE in every head of 128 ran 0.46–0.66 read where used, 0.65–0.96 staged. perf/probe13 had staged only
# one or the other in bf16 cache RoPE 6144: the cache row staged cost it 12 %, the weight nothing. Where a
# reduction (an FP8 amax) follows the RoPE, the loads read where used delay it, and the two ways traded
# places: per-token amax (across the warps), staged 0.85–1.03 against 0.75–0.91 read where used (perf/probe28
# g32, probe29); group amax (inside a warp) after a 64-column span, read where used 0.81–0.86 against
# 0.64–0.75, after a 128-column span 5–16 % slower than staged (perf/probe30) — so a row with a reduction
# after its RoPE keeps its staging — save that the 64-column spans won wherever the amax stayed inside the
# warps: perf/probe32 timed RMSNorm → cache RoPE → FP8 in groups of 32 and 128 after a 64-column span
# (neox tail, gptj head) read where used at 0.79–0.86 × copy in 16-bit (bf16 5120, fp16 7168) against the
# planner's 0.64–0.77, and after 128-column spans 1–12 % under staged again, as in probe30; no reason found
# tells the two widths apart, so the rule names the width it measured. float32 rows that reduce after the
# gather stay staged (perf/probe70 held their staged fragment programs against the stream that had taken
# them): read where used they were timed only without Y. Blocks of fewer than four warps ran staged rows
# at 0.95–0.98 (the sweep's cache RoPE 1536 and 3584 on 64 threads) and were not timed the other way.
GATHER_STAGED_MIN_SPANS = 2
GATHER_WHERE_USED_MIN_THREADS = 4 * WARP_THREADS
GATHER_WHERE_USED_BEFORE_REDUCTION_MAX_COLUMNS = 64


def _gathered_where_used(
    spec: KernelSpec, schedule: Schedule, side_inputs: tuple[Tensor, ...], after_gather: tuple[Reduction, ...]
) -> str | None:
    """Why a fragment program reads its side inputs where used, not staged: a gathered table row that
    fewer than GATHER_STAGED_MIN_SPANS spans of the row read, on a block row of four warps or more, with no
    reduction after it (`after_gather`) or, in 16-bit rows, only ones inside the warps after a row of at
    most GATHER_WHERE_USED_BEFORE_REDUCTION_MAX_COLUMNS; None where they stay staged."""
    lone = [t for t in side_inputs if t.index is not None and t.spans < GATHER_STAGED_MIN_SPANS]
    if schedule.variant != "fragment" or schedule.threads // schedule.block_m < GATHER_WHERE_USED_MIN_THREADS or not lone:
        return None
    if after_gather and (
        DTYPE_BYTES[spec.dtype] != 2
        or any(r.partials is not None for r in after_gather)
        or any(t.shape[-1].size > GATHER_WHERE_USED_BEFORE_REDUCTION_MAX_COLUMNS for t in lone)
    ):
        return None
    names = " and ".join(t.arg for t in lone)
    return (
        f"side inputs read where they are used, not staged: the {names} row waits on the {lone[0].index.lower()} load "
        "before its own, and staged it would hold each row at the first barrier for both; one span reads it, two loads "
        "a rotated value"
    )


# ptxas moves read-only (__restrict__) loads across barriers. The staged per-column side inputs, loaded next
# to the row so that their latency overlaps its own, it may sink past the first reduction, and each row then
# waits for them there. That wait costs where an SM holds few rows, which hide it from each other less; the
# registers the loads hold in place cost where it holds many. Held in place (without __restrict__), 16-bit
# ones cost 8–38 % more registers and a block per SM in 20 of the 32 sweep kernels that stage them (CPU
# census, perf/probe15/), and sunk they ran faster (H200: bf16 LayerNorm → e5m2 2880 0.80 against 0.65 ×
# copy; perf/probe14). float32 ones held in place keep their registers within 3 in 12 of 13 sweep kernels,
# and timed against sunk (H200, perf/probe15/, outputs bit-identical) they gained with the block's warps:
# fp32 LayerNorm → RoPE → FP8 7168 (256 threads, 2 blocks per SM) 0.72 → 0.76, → FP8 5120 (128, 3 blocks)
# 0.78 → 0.80, 2880 (128, 5) 0.91 → 0.92, → RoPE → FP8 3584 (128, 7) even; and lost below four warps:
# 1536 (64 threads, 11 blocks) 1.00 → 0.97, 768 (32 threads, 25 → 23 blocks) 0.97 → 0.91.
PIN_MIN_THREADS = 128


def pins_side_inputs(schedule: Schedule, side_inputs: tuple[Tensor, ...]) -> bool:
    """Whether a fragment program of at least PIN_MIN_THREADS stages float32 per-column side inputs, whose
    loads it then keeps in place."""
    per_column = [t for t in side_inputs if t.per_column]
    return (
        schedule.variant == "fragment"
        and schedule.prefetch
        and schedule.threads >= PIN_MIN_THREADS
        and bool(per_column)
        and all(t.dtype == "float32" for t in per_column)
    )


def with_pinned_side_inputs(schedule: Schedule, side_inputs: tuple[Tensor, ...]) -> Schedule:
    """The staged float32 per-column side inputs of a fragment program lose __restrict__, so that ptxas keeps
    their loads where the program puts them: next to the row's."""
    if not pins_side_inputs(schedule, side_inputs):
        return schedule
    names = " and ".join(t.arg for t in side_inputs if t.per_column)
    why = (
        f"{names} not marked __restrict__: ptxas keeps the staged float32 loads next to the row's, where it would "
        "sink read-only ones past the first barrier and each row would wait for them there"
    )
    return replace(schedule, pinned_side_inputs=True, reasons=schedule.reasons + (why,))


# Per SM: the register file (32-bit registers), the most resident threads, shared memory for blocks.
SM_REGISTERS = 65536
SM_THREADS = 2048
SM_SHARED_BYTES = 227 * 1024
HOPPER_BLOCKS_PER_SM = 32
# The most blocks per SM the planner plans for: a stream grid's, a launch bound's.
MAX_BLOCKS_PER_SM = 16
# A row's fp32 values plus indexing: fewer registers per thread than this must spill.
REGISTERS_BESIDE_ROW = 32
RING_SLOT_CHOICES = (2, 3, 4)
# A ring in registers (the ring hint) holds x one row ahead; per-token side inputs keep a shared ring of two slots.
REGISTER_RING_SLOTS = 2
# The stream ring is dynamic shared memory: past 48 KB a launch needs the kernel's maximum raised, which the
# CUDA module TileLang builds does on the program's first launch. Rings of 56 KB (fp32 LayerNorm → RoPE →
# FP8 7168, two slots) ran and matched their references on the H200 (perf/probe16), so a ring is bounded
# by an SM's shared memory alone.
#
# register_estimate overstates what ptxas allots a stream thread: 0.70–0.87 of it on the eleven wide stream
# programs of perf/probe16 (sm_90a, perf/proto/in_flight.py). So a launch bound up to a fifth under the
# estimate still fits without spilling; one further under spilled (fp32 LayerNorm → RoPE → FP8 7168 at three
# blocks: 166 registers against the 212 it takes at two, 0.63 against 0.85 × copy).
STREAM_REGISTER_SQUEEZE = 1.25
# Rows in flight per SM that the measured stream winners held (blocks per SM × (slots − 1) × row bytes,
# 16384 tokens, docs/bench/tune/tune-stream*.md, tune-shuffle*.md): 32 KB at bf16 4096 (4 blocks, 2
# slots), 40 KB at fp16 4096 (5, 2), 42 KB at fp16 7168 (3, 2), 56 KB at bf16 7168 (2 blocks, 3 slots).
# A deeper ring than that never won (1–5 % slower, NOTES.md step 14), so the ring takes the fewest
# slots that reach it: two for wide rows, more for short ones.
STREAM_BYTES_IN_FLIGHT = 32 * 1024


def _stream_ring_bytes(spec: KernelSpec, schedule: Schedule, side_inputs: tuple[Tensor, ...], slots: int, x_shared: bool = True) -> int:
    """Shared memory of the stream ring: `slots` padded rows (the row is read back in its padded
    layout, so a slot spans the padding too) unless x waits in registers (`x_shared` False), and every
    per-token side input when prefetched."""
    per_token = sum(t.shape[1].size * 4 for t in side_inputs if t.per_token_row) if schedule.prefetch else 0
    x_row = schedule.padded_hidden * DTYPE_BYTES[spec.dtype] if x_shared else 0
    return slots * (x_row + per_token)


def columns_multiple(spec: KernelSpec) -> int:
    """What the padded row must be a multiple of for every op of the chain (ops.Op.columns_multiple_of)."""
    return math.lcm(*(REGISTRY[op.kind].columns_multiple_of(op, chain_context(spec)) for op in spec.op))


# The narrowest copy cp.async makes (it copies 4, 8 or 16 bytes).
CP_ASYNC_MIN_BYTES = 4


def _check_ring_copy_width(spec: KernelSpec, schedule: Schedule) -> None:
    """The ring is filled by cp.async copies of whole vectors, which copy 4, 8 or 16 bytes: a vector of one
    2-byte column cannot be one. Where the row splits evenly into threads × vector columns, TileLang
    partitions one copy of it over the threads; where it does not (a padded row), each thread copies its
    own vectors and the last tile's are masked (codegen.stream_rows): TileLang's own partition of such rows
    narrowed its copies or did not compile (NOTES.md step 17)."""
    if schedule.vector_bytes >= CP_ASYNC_MIN_BYTES:
        return
    key = "schedule.threads" if spec.schedule.threads != "auto" else "schedule.variant"
    raise ChainError(
        key,
        f'"stream" fills its ring with cp.async copies of whole vectors of at least {CP_ASYNC_MIN_BYTES} bytes: {spec.hidden} '
        f"columns over {schedule.threads} threads take {schedule.vector_bytes}-byte vectors of {schedule.vector_elems} column(s); "
        f"fewer threads give each a wider vector (or use variant fragment)",
    )


def _ring_splits_evenly(spec: KernelSpec, schedule: Schedule) -> bool:
    """Whether the ring's row copy splits evenly into every thread's whole vectors (one TileLang copy), as
    in every stream the planner chooses itself: the masked per-thread copy of a padded row is taken only
    where a hint or a tuning winner asks for it (streamed, 11 of 12 padded rows ran slower than their
    fragment programs; perf/probe91)."""
    return schedule.vector_bytes >= CP_ASYNC_MIN_BYTES and spec.hidden % (schedule.threads * schedule.vector_elems) == 0


# The SMs of the full GH100 die, more than any Hopper part enables: a stream program sizes its grid from
# the GPU it compiles on, so its token bound must hold for the largest grid it can get.
MAX_HOPPER_SMS = 144


def stream_token_limit(blocks_per_sm: int, slots: int) -> int:
    """The most tokens a stream program can count: TileLang does its token index math in int32 (addresses
    are int64), and the largest index it forms is the copy issued slots − 1 grids ahead of the last token,
    which also covers the loop bound's ceildiv(tokens − block, grid) (tokens + grid − 1). A pinned count
    past this fails to compile (the constant overflows); a dynamic one would wrap."""
    return MAX_TOKENS + 1 - (slots - 1) * blocks_per_sm * MAX_HOPPER_SMS


def with_stream(spec: KernelSpec, schedule: Schedule, side_inputs: tuple[Tensor, ...]) -> Schedule:
    """Sizes the persistent grid of a stream schedule: blocks per SM within the SM's shared memory,
    threads and registers (the launch bound holds every thread to SM_REGISTERS / resident threads)."""
    if schedule.variant != "stream":
        return schedule
    in_registers = spec.schedule.ring == "registers"
    row_bytes = spec.hidden * DTYPE_BYTES[spec.dtype]
    if row_bytes % 4 and not in_registers:
        raise ChainError(
            "schedule.variant",
            f'"stream" copies rows with cp.async, whose narrowest access is 4 bytes: a row of {spec.hidden} × '
            f"{DTYPE_BYTES[spec.dtype]} bytes leaves every other row misaligned; it needs an even hidden",
        )
    if not in_registers:
        _check_ring_copy_width(spec, schedule)
    slots_hint = _checked_hint(spec.schedule.ring_slots, "schedule.ring_slots", RING_SLOT_CHOICES)
    if in_registers and slots_hint not in (None, REGISTER_RING_SLOTS):
        raise ChainError(
            "schedule.ring_slots",
            f'with ring = "registers" the next row waits in registers, one row ahead: ring_slots must be "auto" or '
            f"{REGISTER_RING_SLOTS} (its per-token side inputs' shared ring), got {slots_hint}",
        )
    blocks_hint = spec.schedule.blocks_per_sm
    # A register ring holds the next row's x in its own dtype beside the row's fp32 values.
    next_row_words = -(-schedule.elems_per_thread * DTYPE_BYTES[spec.dtype] // 4)
    held_words = next_row_words if in_registers else 0
    needed = schedule.elems_per_thread + held_words + REGISTERS_BESIDE_ROW  # a thread's registers, at the least
    estimate = schedule.register_estimate + held_words

    def registers_each(blocks: int) -> int:
        return SM_REGISTERS // (blocks * schedule.threads)

    def sizing(slots: int) -> tuple[int, list[int]]:
        """The ring's bytes at `slots` slots and the block counts per SM that fit beside it."""
        ring = _stream_ring_bytes(spec, schedule, side_inputs, slots, x_shared=not in_registers)
        fits = [
            b
            for b in range(1, MAX_BLOCKS_PER_SM + 1)
            if b * ring <= SM_SHARED_BYTES and b * schedule.threads <= SM_THREADS and registers_each(b) >= needed
        ]
        return ring, fits

    def blocks_for(fits: list[int]) -> int:
        if blocks_hint != "auto":
            return blocks_hint
        comfortable = [b for b in fits if STREAM_REGISTER_SQUEEZE * registers_each(b) >= estimate] or fits[:1]
        return comfortable[-1]

    slots = slots_hint or RING_SLOT_CHOICES[0]
    ring, fits = sizing(slots)
    if ring > SM_SHARED_BYTES:
        key = "schedule.ring_slots" if slots_hint else "schedule.variant"
        registers_could_hold_it = needed + next_row_words <= registers_each(1)
        remedies = [
            *(["fewer ring_slots"] if slots > RING_SLOT_CHOICES[0] and sizing(RING_SLOT_CHOICES[0])[0] <= SM_SHARED_BYTES else []),
            *(['ring = "registers" (the next row held in registers)'] if not in_registers and registers_could_hold_it else []),
            'variant "fragment"',
        ]
        raise ChainError(
            key,
            f'"stream" keeps {slots} rows (and their per-token side inputs) in shared memory: {ring} bytes exceeds the '
            f"{SM_SHARED_BYTES} a block can have on an SM: try {' or '.join(remedies)}",
        )
    if not fits:
        held = f", {held_words} words of the next row's x" if held_words else ""
        shared_ring = ', ring = "shared"' if held_words else ""
        raise ChainError(
            "schedule.variant",
            f'"stream" cannot keep even one block of {schedule.threads} threads on an SM: each thread needs about '
            f"{needed} registers ({schedule.elems_per_thread} values of the row"
            f"{held}, {REGISTERS_BESIDE_ROW} beside them) and one block leaves it {registers_each(1)}: try fewer threads (each "
            f'holds more values, with more registers){shared_ring} or variant "fragment"',
        )
    described = (
        f"one of {', '.join(map(str, fits))} for this row ({schedule.threads} threads holding {schedule.elems_per_thread} "
        f"values each, a {ring}-byte ring)"
    )
    _checked_hint(blocks_hint, "schedule.blocks_per_sm", tuple(fits), described)
    blocks = blocks_for(fits)
    row_bytes = schedule.padded_hidden * DTYPE_BYTES[spec.dtype]
    while (
        not slots_hint and not in_registers and blocks * (slots - 1) * row_bytes < STREAM_BYTES_IN_FLIGHT and slots < RING_SLOT_CHOICES[-1]
    ):
        deeper_ring, deeper_fits = sizing(slots + 1)
        if not deeper_fits or (blocks_hint != "auto" and blocks_hint not in deeper_fits):
            break
        deeper_blocks = blocks_for(deeper_fits)
        if spec.tokens is not None and spec.tokens > stream_token_limit(deeper_blocks, slots + 1):
            break
        slots, ring, blocks = slots + 1, deeper_ring, deeper_blocks
    why = (
        "as the blocks_per_sm hint asks"
        if blocks_hint != "auto"
        else f"the most whose launch bound leaves each thread at least four fifths of the ~{estimate} registers it is estimated to need"
    )
    if not slots_hint and not in_registers:
        in_flight = blocks * (slots - 1) * row_bytes
        why += (
            f"; {slots} ring slots, the fewest that keep {STREAM_BYTES_IN_FLIGHT // 1024} KB of rows in flight per SM"
            if in_flight >= STREAM_BYTES_IN_FLIGHT
            else f"; {slots} ring slots, {in_flight // 1024} KB of rows in flight per SM (a deeper ring does not fit)"
        )
    limit = stream_token_limit(blocks, slots)
    if spec.tokens is not None and spec.tokens > limit:
        raise ChainError(
            "tokens",
            f'{spec.tokens} is more than "stream" at {blocks} blocks per SM and a {slots}-slot ring can count: its int32 '
            f"token index reaches the last token plus {slots - 1} grid(s) of up to {blocks * MAX_HOPPER_SMS} blocks; allowed 1 … {limit}",
        )
    grid = f"persistent grid of {blocks} blocks per SM × the SMs of the GPU it compiles on ({why}; {blocks * HOPPER_SMS} blocks on an H100 SXM or H200)"
    if in_registers:
        beside = f"; its per-token side inputs through a {slots}-slot {ring}-byte shared ring" if ring else ""
        reason = (
            f"{grid}; each block takes every grid-th row, the next row's x loaded into registers (one row ahead, "
            f"{held_words} words a thread, as the ring hint asks) before the current one is reduced: no shared pass or "
            f"barrier for it{beside}"
        )
    else:
        reason = (
            f"{grid}; each block takes every grid-th row through a {slots}-slot {ring}-byte shared-memory ring, the next "
            f"{slots - 1} row(s)' cp.async in flight while the current one is reduced"
        )
    return replace(
        schedule,
        blocks_per_sm=blocks,
        ring_slots=slots,
        ring_in_registers=in_registers,
        most_tokens=limit,
        reasons=schedule.reasons + (reason,),
    )


# A split row's parts count along the grid's y axis, which holds at most this many blocks (the tokens keep x).
MAX_ROW_SPLIT = 65535


def _checked_row_split(spec: KernelSpec, variant: str, block_m: int, multiple: int) -> int:
    """The blocks each row is split over: 1 unless the row_split hint asks for more, which the chain must
    allow — variant fragment, one row per block, no op that needs the whole row in one block
    (ops.Op.needs_whole_row), and parts of whole heads and of whole multiples of every op's columns
    (`multiple`: ops.Op.columns_multiple_of, a quantisation group), so that none spans two parts."""
    key, n = "schedule.row_split", spec.hidden
    if spec.schedule.row_split == "auto":
        return 1
    divisors = tuple(d for d in range(1, min(n, MAX_ROW_SPLIT) + 1) if n % d == 0)
    described = f"the blocks each row is split over, a divisor of hidden = {n} up to {MAX_ROW_SPLIT}"
    row_split = _checked_hint(spec.schedule.row_split, key, divisors, described)
    if row_split == 1:
        return 1
    if variant not in ("auto", "fragment"):
        raise ChainError(
            key,
            f'splits a row over blocks of variant "fragment" only, not "{variant}"; set variant = "fragment" or "auto", or row_split = "auto"',
        )
    if block_m != 1:
        raise ChainError(key, f'splits one row over several blocks: block_m must be "auto" or 1 with it, got {block_m}')
    context = chain_context(spec)
    for index, op in enumerate(spec.op):
        if need := REGISTRY[op.kind].needs_whole_row(op, context):
            raise ChainError(
                key,
                f'must be "auto" or 1 for this chain, got {row_split}: op[{index}] {op.kind} {need}; a row is split only '
                "where every op works on the columns of its part alone",
            )
    unit = math.lcm(multiple, spec.head_dim or 1)
    if n // row_split % unit:
        fitting = ", ".join(str(d) for d in divisors if n // d % unit == 0)
        raise ChainError(
            key,
            f"{row_split} parts of {n // row_split} columns would cut a head or group in two: a part must be a multiple of "
            f"{unit} columns; allowed: {fitting}",
        )
    return row_split


# Few tokens leave most SMs without a row where one block holds a whole one: DeepSeek-V3's q_b (24576 bf16
# columns, per-head RoPE) ran 2.7 / 2.9 / 4.2 µs at 1 / 8 / 64 tokens with one block per row, against
# torch.compile's 1.6 / 2.5 / 8.5; split into 16 parts of 1536 columns 1.3–1.5 / 1.65–1.72 / 3.46 µs. At 256
# tokens the split ran within 5 % of the whole row and at 16384 8 % slower (418 against 388 µs), so the
# planner splits only for the first token bucket (H200, perf/variants17, docs/bench/split/).
FEW_TOKENS = 64
# The least a part moves. Parts of 3–4 KB ran fastest: q_b's 3 KB parts (64 threads) 1.31 µs at one token
# against 1.53 for 1.5 KB (32 threads); Gemma 3's q (4096 bf16 columns, heads of 256) 1.58 / 1.62 µs at 1 / 8
# tokens in 4 KB parts, 1.76 / 1.93 in 2 KB parts — slower than the whole 8 KB row's 1.73 / 1.74.
MIN_PART_BYTES = 3072
# Rows no op of the chain normalises (residual add, RoPE, rescale, quantisation in groups: nothing joins a part's
# threads but a group's few shuffles) pay nothing again in each part but its launch. Timed on the H200 (perf/probe100,
# interleaved rounds, old and new outputs bit-identical): parts of 1 KB against 3 KB, where 3 KB parts split the row,
# held out on 19 rows (a fresh draw and DeepSeek-V3's q_b) 1.055 × at one token (16 faster, one 6 % slower) and 1.040 ×
# at 8 (two slower by 3 and 6 %), but 0.990 × at 64 with seven slower by up to 19 % (fp32 FP8 g16 18432: 64 parts ×
# 64 tokens, 4096 one-warp blocks). So the finer parts take a route of their own up to FINE_SPLIT_TOKENS, and the
# 3 KB parts serve from there to FEW_TOKENS. Rows that 3 KB parts keep whole (under 6 KB) lost split in two to four.
NORMLESS_MIN_PART_BYTES = 1024
FINE_SPLIT_TOKENS = 8


def row_splits(spec: KernelSpec, min_part_bytes: int) -> tuple[int, ...]:
    """Every number of parts, most first, a row of this chain can be split into with parts of at least
    `min_part_bytes` that keep whole heads and groups and that a block can hold; () where the chain needs
    whole rows (ops.Op.needs_whole_row) or its variant or block_m hint rules a split out."""
    hints = spec.schedule
    if hints.variant not in ("auto", "fragment") or hints.block_m not in ("auto", 1):
        return ()
    context = chain_context(spec)
    if any(REGISTRY[op.kind].needs_whole_row(op, context) for op in spec.op):
        return ()
    multiple = columns_multiple(spec)
    unit, n, elem = math.lcm(multiple, spec.head_dim or 1), spec.hidden, DTYPE_BYTES[spec.dtype]
    found = []
    for parts in range(n // max(unit, -(-min_part_bytes // elem)), 1, -1):
        if n % parts or n // parts % unit:
            continue
        try:
            _row_schedule(spec, 1, None, multiple, parts)
        except ChainError:
            continue
        found.append(parts)
    return tuple(found)


def few_token_split(spec: KernelSpec, up_to: int = FEW_TOKENS) -> int:
    """The blocks each row is split over on the planner's route for at most `up_to` tokens: the most parts of at
    least MIN_PART_BYTES (row_splits) — of NORMLESS_MIN_PART_BYTES up to FINE_SPLIT_TOKENS where those split the
    row and no op normalises it; 1 where there are none, or the spec's hints pin a schedule a split would change."""
    hints = spec.schedule
    if any(value != "auto" for value in (hints.row_split, hints.threads, hints.blk_k, hints.ring_slots)):
        return 1
    parts = next(iter(row_splits(spec, MIN_PART_BYTES)), 1)
    if up_to <= FINE_SPLIT_TOKENS and parts > 1 and not any(REGISTRY[op.kind].place == NORMALIZE for op in spec.op):
        return row_splits(spec, NORMLESS_MIN_PART_BYTES)[0]
    return parts


# A row of up to 1024 values is held by one warp for many tokens (TARGET_ELEMS_PER_THREAD a thread). At few
# tokens only a handful of warps run on the whole GPU, and that one holds all of a row's loads and its
# reductions: on two warps every such sweep spec ran as fast or faster at 8 and 64 tokens (H200, untuned,
# perf/few-threads, docs/bench/few-threads/: 0.86–1.01 × the one-warp time at 8 tokens, median 0.95; the most
# where a thread held the most values — bf16 1024 with 32 a thread 0.86–0.91, fp16 512 with 16 0.98–0.99).
# Wider rows on twice their threads went either way (0.89–1.17 at 64 threads, 0.87–1.44 at 128–512), so they keep
# the many-token schedule.
FEW_TOKEN_THREADS = 2 * WARP_THREADS


def few_token_threads(spec: KernelSpec, many: Schedule) -> int | None:
    """FEW_TOKEN_THREADS where the route for up to FEW_TOKENS tokens keeps whole rows and the schedule for
    many tokens (`many`) holds each in one warp (or, for a row of one warp's vectors, part of one: the route of
    one row a block below it holds it in a warp), the row not narrower than a warp's vectors, and the hints pin
    nothing the thread count would change; else None (that schedule serves few tokens too)."""
    hints = spec.schedule
    if any(value != "auto" for value in (hints.row_split, hints.threads, hints.blk_k, hints.ring_slots, hints.blocks_per_sm)):
        return None
    if hints.variant not in ("auto", "fragment") or hints.block_m not in ("auto", 1):
        return None
    if narrow_row(spec) or many.threads > WARP_THREADS * many.block_m or many.variant not in ("fragment", "stream"):
        return None
    if few_token_split(spec) > 1:  # last: it plans every split the row allows
        return None
    try:
        _row_schedule(spec, 1, FEW_TOKEN_THREADS, columns_multiple(spec))
    except ChainError:
        return None
    return FEW_TOKEN_THREADS


# Up to WAVE_TOKENS tokens every row of a launch is resident at once (a block or two an SM), so the kernel takes
# about one row's time — its loads, its chain of per-value work, its reductions — on the warps of one or two
# blocks. A row the many-token schedule holds on two or three warps (so that many small blocks fill an SM)
# then leaves each scheduler about one warp to issue from. Measured (H200, perf/probe99: 53 specs of the sweep,
# probe98's plain rows and a fresh draw, old and new builds in interleaved rounds): on four warps a row or more
# (the ranking's pick among them) at 128 tokens 1.078 × geometric mean over the 41 rows the rule takes, 35
# faster by 2 % or more, none slower; at 256 1.049 ×, 27 faster, none slower; at 8 tokens, where the route
# also serves (no few-token route), 1.067 × over 22, two slower (fp32 RMSNorm 1536 −6 %, −3 %). Rows under
# 2 KB lost (the extra warps hold padding) and rows that gather lost 10–15 % (plan._planner_routes): both are
# left out. The plain rows torch.compile had beaten at 128–256 tokens (0.94–0.96 ×) run 1.02–1.15 × it.
WAVE_TOKENS = 256
WAVE_MIN_THREADS = 4 * WARP_THREADS


def wave_threads(spec: KernelSpec) -> bool:
    """Whether the planner has a route up to WAVE_TOKENS tokens (above FEW_TOKENS where a few-token route
    serves those) on WAVE_MIN_THREADS threads or more a row: where the one-row-a-block fragment program it
    would otherwise run (choose_schedule's, unstreamed) holds a row of 2 KB or more on fewer, and the hints
    pin nothing the thread count would change."""
    hints = spec.schedule
    if any(value != "auto" for value in (hints.row_split, hints.threads, hints.blk_k, hints.ring_slots, hints.ring, hints.blocks_per_sm)):
        return False
    if hints.variant not in ("auto", "fragment") or hints.block_m not in ("auto", 1):
        return False
    if spec.hidden * DTYPE_BYTES[spec.dtype] < WAVE_MIN_THREADS * 16:
        return False  # fewer 16-byte vectors than threads: the extra warps would hold padding
    multiple = columns_multiple(spec)
    try:
        if _row_schedule(spec, 1, None, multiple).threads >= WAVE_MIN_THREADS:
            return False
        _row_schedule(spec, 1, None, multiple, min_threads=WAVE_MIN_THREADS)
    except ChainError:
        return False
    return True


def _check_blocks_count_tokens(spec: KernelSpec, block_m: int) -> None:
    """A pinned count rounded up to whole blocks of block_m rows must stay within TileLang's int32 row
    index: the bounds of the last block's rows are formed from it, and a constant past 2³¹ − 1 does not
    compile (a random-spec hunt found 2³¹ − 1 tokens at block_m 2)."""
    if spec.tokens is None:
        return

    def rounded(rows: int) -> int:
        return -(-spec.tokens // rows) * rows

    if rounded(block_m) <= MAX_TOKENS:
        return
    fitting = [b for b in range(1, MAX_BLOCK_M + 1) if power_of_two(b) and rounded(b) <= MAX_TOKENS]
    raise ChainError(
        "schedule.block_m",
        f"{block_m} rows per block round the pinned {spec.tokens} tokens up to {rounded(block_m)}, past {MAX_TOKENS}, "
        f"the most rows TileLang's int32 row index can count; block_m that fit: {', '.join(map(str, fitting))}",
    )


def choose_schedule(spec: KernelSpec, few_tokens: int = 0, wave: bool = False) -> Schedule:
    """Variant, threads, block_m and vector width; prefetch is decided once the stages are known.
    `few_tokens`: the last count of the planner's route for few tokens this schedule serves (FINE_SPLIT_TOKENS or
    FEW_TOKENS: few_token_split, or few_token_threads where the rows stay whole), 0 for any other route; `wave`:
    of its route up to WAVE_TOKENS (wave_threads)."""
    hints = spec.schedule
    threads = _checked_hint(hints.threads, "schedule.threads", THREAD_CHOICES, "a multiple of 32 from 32 to 1024")
    block_m = _checked_hint(hints.block_m, "schedule.block_m", tuple(b for b in range(1, MAX_BLOCK_M + 1) if power_of_two(b))) or 1
    _check_blocks_count_tokens(spec, block_m)
    if hints.blk_k != "auto" and hints.variant not in ("splitk", "auto"):
        raise ChainError("schedule.blk_k", f'only applies to variant = "splitk", not "{hints.variant}"')
    if hints.ring_slots != "auto" and hints.variant != "stream":
        raise ChainError("schedule.ring_slots", f'only applies to variant = "stream", not "{hints.variant}"')
    if hints.ring != "auto" and hints.variant != "stream":
        raise ChainError("schedule.ring", f'only applies to variant = "stream", not "{hints.variant}"')
    if hints.blocks_per_sm != "auto" and hints.variant not in ("stream", "fragment"):
        raise ChainError("schedule.blocks_per_sm", f'applies to variant = "stream" or "fragment", not "{hints.variant}"')
    if hints.variant == "stream" and block_m != 1:
        raise ChainError("schedule.block_m", f'variant "stream" takes one row per step: block_m must be "auto" or 1, got {block_m}')
    variant = hints.variant
    if hints.blk_k != "auto" and variant == "auto":
        variant = "splitk"
    shared = hints.rows_share_threads is True
    if shared and (block_m == 1 or variant not in ("auto", "fragment")):
        raise ChainError(
            "schedule.rows_share_threads",
            'puts the rows of a block on the same threads: it takes variant "fragment" (or "auto") and block_m 2, 4, 8 or 16, '
            f'got variant "{variant}", block_m {hints.block_m}',
        )
    share_warps = variant in ("auto", "fragment") and rows_share_warps(spec)
    if threads and not row_threads_allowed(threads, 1 if shared else block_m, share_warps):
        narrow = f", or a power of two below {WARP_THREADS} (rows of this width and chain share warps)" if share_warps else ""
        raise ChainError(
            "schedule.threads",
            f"with block_m = {block_m} each row of a block takes threads / block_m threads of its own, whole warps{narrow}: "
            f"got {threads} threads, {threads / block_m:g} a row; threads a multiple of {WARP_THREADS * block_m} up to {THREAD_CHOICES[-1]} give each row whole warps",
        )
    multiple = columns_multiple(spec)
    row_split = _checked_row_split(spec, variant, block_m, multiple)
    few_token_parts = few_token_split(spec, few_tokens) if few_tokens else 1
    if few_token_parts > 1:
        why = f"the planner's split for up to {few_tokens} tokens: one block per row would leave most SMs idle"
        if few_token_parts != few_token_split(spec):
            why += f"; parts of at least {NORMLESS_MIN_PART_BYTES} bytes where no op normalises the row ({MIN_PART_BYTES} from {FINE_SPLIT_TOKENS + 1} tokens)"
        return _row_schedule(spec, block_m, threads, multiple, few_token_parts, why, shared_threads=shared)
    if few_tokens:
        why = f"the planner's two warps a row for up to {FEW_TOKENS} tokens, where one holds it for many: one warp would hold all of the row's loads"
        return _row_schedule(spec, block_m, FEW_TOKEN_THREADS, multiple, threads_by=why, shared_threads=shared)
    if wave:
        return _row_schedule(spec, block_m, threads, multiple, min_threads=WAVE_MIN_THREADS, shared_threads=shared)
    if variant in ("naive", "splitk"):
        supported = len(spec.op) == 1 and REGISTRY[spec.op[0].kind].offers_variant(spec.op[0], variant)
        if not supported:
            able = sorted(op.kind for op in REGISTRY.values() if variant in op.whole_kernel_variants)
            raise ChainError(
                "schedule.variant",
                f'"{variant}" is a whole-kernel variant for a chain of one {" or ".join(able)} op over whole rows; this '
                f'chain ({" → ".join(op.kind for op in spec.op)}) needs "fragment" or "auto"',
            )
        if variant == "splitk":
            return _splitk_schedule(spec, block_m, threads, hints.blk_k)
    try:
        schedule = _row_schedule(spec, block_m, threads, multiple, row_split, share_warps=share_warps, shared_threads=shared)
    except ChainError:
        if variant == "auto" and len(spec.op) == 1 and REGISTRY[spec.op[0].kind].offers_variant(spec.op[0], "splitk"):
            return _splitk_schedule(spec, block_m, threads, "auto")
        raise
    if variant == "reread":
        if block_m != 1:
            raise ChainError("schedule.block_m", f'variant "reread" reads one row a block: block_m must be "auto" or 1, got {block_m}')
        return reread_schedule(spec, threads, "as the variant hint asks")
    if variant == "naive":
        shared = block_m * schedule.padded_hidden * DTYPE_BYTES[spec.dtype]
        if shared > SHARED_BYTES_LIMIT:
            raise ChainError(
                "schedule.variant",
                f'"naive" stages the row in shared memory: {shared} bytes exceeds {SHARED_BYTES_LIMIT}: take '
                + ("fewer rows a block (block_m) or " if block_m > 1 else "")
                + 'variant "splitk" (the row read in chunks) or "fragment"',
            )
        return replace(
            schedule,
            variant="naive",
            reasons=schedule.reasons + ("the row is staged in shared memory and read from there twice (the textbook form)",),
        )
    if variant == "stream":
        schedule = replace(schedule, variant="stream")
    return schedule


# Variant reread (perf/probe42, H200, 16384 tokens): fp16 RMSNorm → GPT-J RoPE → FP8 g64 at 16384 columns and
# fp16 LayerNorm → neox RoPE with Y at 12288 ran 0.86 and 0.78 × copy as the planner's fragment programs,
# which hold the row in registers (512 threads, 64 registers, two blocks an SM). Read twice — the norm's
# sums over the tiles, then each tile again from L2 — with 512 threads under a bound of three blocks (40
# registers) they ran 0.94 and 0.93, under four 0.97 (RMSNorm) and 0.52 (LayerNorm: 88 bytes spilled),
# on 256 threads under four 0.85 and 0.97, and under two 0.80–0.82 either way: 1536 threads an SM are
# what held on both. Tiles are one 16-byte vector a thread (the probe's); at most 512 threads.
REREAD_THREADS_PER_SM = 1536
REREAD_MAX_THREADS = 512
# A reread program finishes its tiles in an unrolled pass where the row is at most this many tiles: each
# tile's load is then the statistics pass's load of the same address (X is read-only), which nvcc reuses,
# so the row's words stay in registers (4 a tile: one 16-byte vector) and it is read from memory once.
# perf/probe44 (H200, 16384 tokens, × copy, the 25 chains of perf/probe43, loop serial → unrolled, outputs
# bit-identical): where nvcc had kept the serial loop a loop (a branch in its body: RoPE's span) and the
# words fit, the unrolled pass ran faster — fp16 RMSNorm → RoPE → FP8 16384 (4 tiles) 0.883 → 0.950,
# LayerNorm → RoPE → FP8 fp16 9216 (3) 0.697 → 0.802, → FP8 fp16 12288 (3) 0.803 → 0.881; at 5 tiles and
# more the words spilled (RMSNorm → cache RoPE bf16 20480, 5 tiles: 284 bytes, 0.97 → 0.31; float32
# LayerNorm 14336–16384: 0.66–0.80 → 0.52–0.59). Where nvcc had unrolled the loop itself the PTX and the
# time are the same either way (13 of 25). One loss at ≤ 4 tiles: fp16 LayerNorm → RoPE 12288 on 512
# threads (3 tiles, 28 bytes spilled) 0.925 → 0.801, a row LayerNorm now reads on 256 threads (6 tiles).
# Held out (perf/probe46): fp16 RMSNorm → RoPE → FP8 14336 0.85 → 0.90, with Y 16384 0.94 → 0.93; bf16
# RMSNorm → cache RoPE 16384 (four tiles, a gathered cos/sin row beside the words) spilled 92 bytes and ran
# 0.97 → 0.59, so a row that gathers is read again instead.
REREAD_HELD_TILES = 4


def with_held_tiles(schedule: Schedule, side_inputs: tuple[Tensor, ...]) -> Schedule:
    """A reread program of at most REREAD_HELD_TILES tiles that gathers no table row finishes its tiles in an
    unrolled pass, from the words its statistics pass loaded; the others read each tile again."""
    if schedule.variant != "reread":
        return schedule
    gathers = any(t.index is not None for t in side_inputs)
    if schedule.tiles <= REREAD_HELD_TILES and not gathers:
        words = 4 * schedule.tiles
        why = (
            f"the tiles finished in an unrolled pass, each from the words the statistics pass loaded (at most {REREAD_HELD_TILES} "
            f"tiles: the row's {words} words a thread stay in registers and it is read from memory once)"
        )
        return replace(schedule, tiles_held=True, register_estimate=schedule.register_estimate + words, reasons=schedule.reasons + (why,))
    why = "a gathered cos/sin row beside the held words spilled" if gathers else f"more than {REREAD_HELD_TILES} tiles' words would spill"
    return replace(schedule, reasons=schedule.reasons + (f"each tile read again to finish it (from L2): {why}",))


# A 16-bit row whose statistics take two passes (LayerNorm: the mean, then the centred squares) is read in
# tiles on at most 256 threads under a bound of four blocks (64 registers): perf/probe45 (H200, 16384 tokens,
# × copy, every 16-bit LayerNorm chain over a whole row of 6144–16384 columns in two draws of perf/probe23's
# generator, 12 chains) timed it against the fragment program and the 512-thread bound of three. At 3–6
# tiles it ran faster on 8 of 10, within 1.3 % on two (bf16 10240 0.973 → 0.966): bf16 LayerNorm 12288 0.77 →
# 0.95, fp16 12288 0.83 → 0.96, fp16 LayerNorm → RoPE 12288 0.79 → 0.91, → FP8 12288 0.73 → 0.83, → FP8
# 6144 0.74 → 0.83, → RoPE 6144 0.80 → 0.90, bf16 8192 0.92 → 0.96; the 512-thread programs spilled or lost
# on five of them. At 8 tiles (16384 columns) it lost 16 % on bf16 LayerNorm (0.96 → 0.81) and tied on fp16
# LayerNorm → RoPE → FP8. float32 rows, whose words are their fp32 values, stay on the 512-thread bound:
# there 256 threads lost on seven of twelve (by up to 27 %). None of the chains had per-head spans or a
# gathered cos/sin table; the rule leaves those to the rules measured on them. Held out (perf/probe46, seed
# 46): against the fragment program three of four faster (fp16 LayerNorm → RoPE 8192 0.59 → 0.94, → RoPE →
# FP8 12288 0.69 → 0.78, bf16 10240 0.59 → 0.72, bf16 LayerNorm 6144 even). Against the stream that
# schedule.wide_stream plans for FP8-only rows it won where the stream held one block an SM (probe45: → FP8
# 12288 0.73 → 0.83; probe46: → RoPE → FP8 bf16 10240 0.59 → 0.72, fp16 12288 0.69 → 0.78) and lost two of
# three where it held two (probe46: → FP8 8192 0.86 → 0.83, → RoPE → FP8 8192 0.82 → 0.73; probe45: → FP8
# 6144 0.74 → 0.83): a stream of one block has nothing else in flight while its block reduces.
REREAD_TWO_PASS_MAX_THREADS = 256
REREAD_TWO_PASS_THREADS_PER_SM = 1024
REREAD_TWO_PASS_TILES = range(3, 7)
REREAD_OVER_STREAM_BLOCKS = 1


def statistic_passes(spec: KernelSpec) -> int:
    """The passes over a row read in tiles that the chain's statistics of the whole row take (ops.Op.row_statistic_passes)."""
    context = chain_context(spec)
    return sum(REGISTRY[op.kind].row_statistic_passes(op, context) for op in spec.op)


def _two_pass_16_bit(spec: KernelSpec) -> bool:
    return statistic_passes(spec) >= 2 and DTYPE_BYTES[spec.dtype] == 2


def reread_threads(spec: KernelSpec) -> int:
    """The most threads a reread program of `spec` takes unhinted (REREAD_MAX_THREADS,
    REREAD_TWO_PASS_MAX_THREADS)."""
    return REREAD_TWO_PASS_MAX_THREADS if _two_pass_16_bit(spec) else REREAD_MAX_THREADS


def reread_threads_per_sm(spec: KernelSpec, threads: int) -> tuple[int, str]:
    """The threads an SM a reread program's launch bound leaves on `threads` threads, and the probe that
    measured it: 16-bit rows with two statistics passes on up to 256 threads under four blocks of 256
    (perf/probe45), everything else — those rows on 512 threads too (perf/probe42: bound three 0.93, two
    0.82) — under three blocks of 512."""
    if _two_pass_16_bit(spec) and threads <= REREAD_TWO_PASS_MAX_THREADS:
        return REREAD_TWO_PASS_THREADS_PER_SM, "perf/probe45 (16-bit rows, two statistics passes)"
    return REREAD_THREADS_PER_SM, "perf/probe42"


def reread_schedule(spec: KernelSpec, threads_hint: int | None, why: str) -> Schedule:
    """The row read in tiles of one 16-byte vector a thread (hidden a whole number of them, at least two):
    on the most threads up to reread_threads' (or `threads_hint`) whose tile every op can run on
    (ops.Op.tile_rule) and lay out, under the bound reread_threads_per_sm gives them. Raises ChainError naming
    schedule.variant (or schedule.threads) where none can."""
    elem = DTYPE_BYTES[spec.dtype]
    vector = 16 // elem
    context = chain_context(spec)
    most_threads = reread_threads(spec)
    counts = (threads_hint,) if threads_hint else tuple(t for t in reversed(thread_counts(spec)) if t <= most_threads)
    refusals = []
    for threads in counts:
        tile = threads * vector
        if spec.hidden % tile or spec.hidden // tile < 2:
            continue
        refused = [f"{op.kind} {reason}" for op in spec.op if (reason := REGISTRY[op.kind].tile_rule(op, context, tile))]
        if not refused:
            refused = _layout_refusals(spec, context, vector, threads)
        if refused:
            refusals.append(f"tiles of {tile} columns: {'; '.join(refused)}")
            continue
        tiles = spec.hidden // tile
        threads_per_sm, measured = reread_threads_per_sm(spec, threads)
        blocks = max(1, threads_per_sm // threads)
        passes = (
            "a pass over the tiles for the norm's sums, then each tile finished"
            if statistic_passes(spec)
            else "each tile finished as it is loaded (the chain's statistics lie within a tile)"
        )
        reasons = (
            f"variant reread ({why}): the row read in {tiles} tiles of {tile} columns, one {vector * elem}-byte vector a thread of "
            f"{threads}: {passes}, so a thread holds one tile's fp32 values, not the row's",
            f"{blocks} blocks per SM (a launch bound): {threads_per_sm} threads an SM, what held in {measured}",
        )
        return Schedule(
            variant="reread",
            block_m=1,
            threads=threads,
            vector_elems=vector,
            vector_bytes=vector * elem,
            padded_hidden=spec.hidden,
            elems_per_thread=spec.hidden // threads,
            blk_k=None,
            prefetch=False,
            joint_reduction=False,
            register_estimate=2 * vector + REGISTERS_BESIDE_ROW,
            reasons=reasons,
            blocks_per_sm=blocks,
            tiles=tiles,
        )
    key = "schedule.threads" if threads_hint else "schedule.variant"
    tiling = [str(t) for t in THREAD_CHOICES if spec.hidden % (t * vector) == 0 and spec.hidden // (t * vector) >= 2]
    remedy = f"threads that make whole tiles of it: {', '.join(tiling)}" if threads_hint and tiling else 'take variant "fragment"'
    detail = "; ".join(refusals) or (
        f"hidden = {spec.hidden} is not two or more whole tiles of one {vector}-column vector a thread"
        + (f" of {threads_hint}" if threads_hint else f" of up to {most_threads}")
        + f" ({remedy})"
    )
    raise ChainError(key, f'"reread" reads the row in tiles that every op can run on alone; none fits this chain: {detail}')


# Variant auto reads a row twice where its fragment program would hold it at this many blocks an SM or
# fewer, its statistics take one pass, and its tiles take this many threads or more. Held out on 25 chains
# (perf/probe43, H200, 16384 tokens, 6144–20480 columns, every program checked against its reference): the
# RMSNorm chains on 384–512 threads ran even or faster, 10 of 10 (bf16 RMSNorm → FP8 12288 0.89 → 1.01,
# fp16 9216 0.86 → 0.97, fp32 RMSNorm → RoPE → FP8 8192 0.87 → 0.96, the rest within −1 … +3 %); plain
# RMSNorm 10240 on 320 threads spilled 36 bytes and lost 13 %. LayerNorm, whose statistics take two passes
# (three reads of the row), gained on three 16-bit rows (fp16 LayerNorm → RoPE 12288 0.79 → 0.90, → RoPE →
# FP8 9216 0.58 → 0.73) and lost 4–57 % on eight (bf16 and float32; three of them spilled 40–156 bytes) on
# those threads; on 256 (REREAD_TWO_PASS_MAX_THREADS) its 16-bit rows of 3–6 tiles gain (perf/probe45).
# One-pass rows are read in tiles only where the kernel writes nothing but FP8 (no Y, no residual_out): the
# gains above were all such rows; rows writing Y moved −13 … +2 % (perf/probe43, 46), and held out in
# perf/probe47 plain bf16 RMSNorm 18432 ran 0.26 × copy. perf/probe48 (H200, 16384 tokens, × copy, reread →
# fragment): plain RMSNorm bf16 15360–20480 0.26–0.55 → 0.98–0.99, fp16 16384 0.50 → 0.99, fp32 13824–24576
# 0.48–0.84 → 0.94–0.98, bf16 24576 0.26 → 0.80, 12288 (three tiles) 0.96 → 0.93. With nothing after the
# norm that branches or waits, nvcc unrolls the finishing loop itself and holds every tile's words, which the
# bound's 40 registers do not hold (ptxas: 132–416 bytes spilled; RMSNorm → RoPE, → rescale, without weight:
# 52–160); the FP8 chains of the same widths spill nothing.
REREAD_MAX_FRAGMENT_BLOCKS = 2
REREAD_STATISTIC_PASSES = 1
REREAD_MIN_THREADS = 384


def wide_reread(
    spec: KernelSpec, fragment: Schedule, side_inputs: tuple[Tensor, ...], streamed: Schedule | None, writes_row: bool
) -> Schedule | None:
    """The reread schedule variant "auto" takes instead of `fragment` (the planner's route of many tokens),
    or None: one statistics pass where the fragment program holds the row at REREAD_MAX_FRAGMENT_BLOCKS or
    fewer, the kernel writes no row in the activations' dtype (`writes_row`: Y, residual_out) and the tiles
    take REREAD_MIN_THREADS or more; two passes over a 16-bit row that is
    REREAD_TWO_PASS_TILES tiles on REREAD_TWO_PASS_MAX_THREADS threads (the threads measured), without
    per-head spans or a gathered table, as the chains it was measured on, and where the stream the rules
    would take instead (`streamed`) holds at most REREAD_OVER_STREAM_BLOCKS blocks an SM."""
    if spec.schedule.variant != "auto" or spec.schedule.threads != "auto" or spec.schedule.blocks_per_sm != "auto":
        return None
    if fragment.variant != "fragment" or fragment.block_m != 1 or fragment.row_split != 1 or sector_rows(spec, fragment) is not None:
        return None  # (several rows a block staging their scales: see wide_stream)
    fragment_blocks = fragment_blocks_per_sm(fragment, side_inputs)
    passes = statistic_passes(spec)
    # perf/probe45's chains: whole rows (no per-head spans), no gathered table
    two_pass = _two_pass_16_bit(spec) and spec.head_dim is None and all(t.index is None for t in side_inputs)
    if two_pass and streamed is not None and streamed.blocks_per_sm > REREAD_OVER_STREAM_BLOCKS:
        return None
    if not two_pass and (fragment_blocks > REREAD_MAX_FRAGMENT_BLOCKS or passes != REREAD_STATISTIC_PASSES or writes_row):
        return None
    why = (
        "variant auto: a 16-bit row whose statistics take two passes"
        if two_pass
        else f"variant auto: the fragment program would hold the whole row at {fragment_blocks} block(s) an SM"
    )
    try:
        reread = reread_schedule(spec, None, why)
    except ChainError:
        return None
    if two_pass:
        return reread if reread.threads == REREAD_TWO_PASS_MAX_THREADS and reread.tiles in REREAD_TWO_PASS_TILES else None
    return reread if reread.threads >= REREAD_MIN_THREADS else None


# Variant "auto" streams only rows of at most a kilobyte. The issue-16 sweep (docs/bench/sweep/ab.md: 33
# specs timed with both variants in one H200 run, 16384–131072 tokens, 16-byte vectors either way)
# found one row per block faster on every wider row: read-heavy chains too (RMSNorm → FP8 bf16 4096 at
# 128 threads 0.90 against 0.83 × copy streamed, fp16 RMSNorm → RoPE → FP8 1024 0.97 against 0.85,
# LayerNorm → RoPE → FP8 fp32 1536 0.97 against 0.79), and rows of 1.5–4 KB whatever they write (fp16
# LayerNorm 1536 0.93 against 0.85, fp16 RMSNorm 2048 0.97 against 0.90). Only the 1 KB rows gained:
# fp16 RMSNorm 512 0.89 against 0.79, bf16 LayerNorm 512 0.85 against 0.78 — 32 threads hold the whole
# row in two vectors each, too little per block to keep an SM's loads in flight, which the ring does.
STREAM_MAX_ROW_BYTES = 1024
# The stream variant pays a ring and a loop per row; with fewer values per thread than this the block
# does too little per row for the overlap to pay (the prototype's best held 32–56, NOTES.md step 13).
STREAM_MIN_ELEMS_PER_THREAD = 16


def short_row_streams(row_bytes: int, elems_per_thread: int) -> bool:
    """Whether variant "auto" streams a row of `row_bytes` held in `elems_per_thread` values a thread, where
    its per-token side inputs are prefetched and the ring can take the row."""
    return elems_per_thread >= STREAM_MIN_ELEMS_PER_THREAD and row_bytes <= STREAM_MAX_ROW_BYTES


def _stream_by_default(spec: KernelSpec, schedule: Schedule, side_inputs: tuple[Tensor, ...]) -> str | None:
    """Why variant "auto" should stream this chain, or None where one row per block measured better."""
    row = spec.hidden * DTYPE_BYTES[spec.dtype]
    if not short_row_streams(row, schedule.elems_per_thread):
        return None
    if not schedule.prefetch and any(t.per_token_row for t in side_inputs):
        return None  # the per-token side inputs would be read after the reductions: the stall the ring hides
    return f"a short row ({row} bytes ≤ {STREAM_MAX_ROW_BYTES}): one row per block leaves an SM too few bytes in flight"


# A fragment block holds its row in registers from load to store, with a barrier or two between, so an
# SM keeps loads in flight only through its other resident blocks. Where registers leave room for only
# one block, wide rows starve. The issue-16 sweep (H200, 16384 tokens, docs/bench/sweep/): fp16 LayerNorm
# → RoPE 12288 ran 0.49 × copy with one 512-thread block per SM (79 registers) and 0.72 with a launch
# bound of two (64 registers, no spill); RMSNorm → RoPE → FP8 16384 0.47 → 0.69, with Y in bf16 0.65 →
# 0.86. ptxas fits two blocks where the estimate below is at most a fifth over the cap. Where staged
# weight and bias do not fit (fp32 LayerNorm → FP8 12288: ~104 registers against 64; a bound of two
# spilled and ran 0.47), reading them where they are used does: 0.86, against 0.63 staged on one block.
FRAGMENT_SQUEEZE = 1.25


def fits_two_blocks(registers: int, threads: int) -> bool:
    """Whether two blocks of `threads` can be resident on an SM when each thread needs ~`registers`: with
    room to spare, or under a launch bound of two that ptxas can meet (FRAGMENT_SQUEEZE)."""
    return 2 * threads <= SM_THREADS and registers <= FRAGMENT_SQUEEZE * (SM_REGISTERS // (2 * threads))


def fragment_registers(schedule: Schedule, side_inputs: tuple[Tensor, ...]) -> int:
    """Registers a fragment thread needs, as ptxas allotted them in the sweep's kernels (within ~10 %): the
    row's fp32 values, the per-column side inputs staged in their own dtype, and indexing beside them."""
    staged_bytes = sum(DTYPE_BYTES[t.dtype] for t in side_inputs if t.per_column) if schedule.prefetch else 0
    return schedule.elems_per_thread + -(-schedule.columns_per_thread * staged_bytes // 4) + REGISTERS_BESIDE_ROW


def with_fragment_residency(spec: KernelSpec, schedule: Schedule, side_inputs: tuple[Tensor, ...]) -> Schedule:
    """Blocks per SM of a fragment schedule: two where registers would otherwise keep one and the launch
    bound can fit two (FRAGMENT_SQUEEZE) — without staging the side inputs if only that fits, or if staged
    they fit only squeezed and unstaged they fit the cap outright — else one.

    A bound past two is left to the hint and to `fusegen tune`: measured on the H200 (session 9,
    docs/bench/sweep/ab.md runs 4–5, 16384 tokens), bounding every fragment kernel at the most blocks the
    register estimate could fit moved 48 specs by −0.29 to +0.10 × copy — bf16 LayerNorm 3840 0.80 → 0.91,
    fp16 QK-norm → RoPE 7168 0.85 → 0.95 — with no sign that holds: fp16 LayerNorm → RoPE 4096 fell 0.95 →
    0.79 at the same 80 registers and six blocks either way, RMSNorm → RoPE → FP8 5120 0.86 → 0.70 at six
    blocks and 0.90 at seven, and where ptxas spilled under the bound (LayerNorm fp32 → FP8 2880) 0.92 → 0.63."""
    most = min(MAX_BLOCKS_PER_SM, SM_THREADS // schedule.threads)
    hint = _checked_hint(
        spec.schedule.blocks_per_sm,
        "schedule.blocks_per_sm",
        tuple(range(1, most + 1)),
        f"1 to {most} for variant fragment at {schedule.threads} threads (the SM holds {SM_THREADS} threads)",
    )
    if hint:
        return replace(
            schedule, blocks_per_sm=hint, reasons=schedule.reasons + (f"{hint} block(s) per SM, as the blocks_per_sm hint asks",)
        )
    if schedule.blocks_per_sm:
        return schedule  # a rule bounded it already (gathering_row's FEW_WARPS_BOUNDS)
    # A row that with_prefetch left unstaged by default (a gathered row read where used) is sized as if
    # staged: unstaged, the estimate claims room for two blocks that ptxas did not give LayerNorm → cache
    # RoPE 12288 on 512 threads, which without the bound ran 0.51 × copy against 0.78 (perf/probe30 g59).
    default_unstaged = not schedule.prefetch and spec.schedule.prefetch == "auto"
    need = fragment_registers(replace(schedule, prefetch=True) if default_unstaged else schedule, side_inputs)
    cap = SM_REGISTERS // (2 * schedule.threads)
    if need * schedule.threads * 2 <= SM_REGISTERS or 2 * schedule.threads > SM_THREADS:
        return replace(schedule, blocks_per_sm=1)
    unstaged = _unstaged(schedule, side_inputs)
    unstaged_need = fragment_registers(unstaged, side_inputs)
    may_unstage = (schedule.prefetch or default_unstaged) and spec.schedule.prefetch == "auto"
    # Two blocks that fit only by squeezing the staged side inputs under the cap ran slower than the same two
    # blocks reading them where used, which fit the cap outright (session 9, H200, 16384 tokens: fp16 RMSNorm
    # → RoPE → FP8 16384 0.69 → 0.82, with Y in bf16 0.85 → 0.93, fp16 LayerNorm → RoPE 12288 0.72 → 0.81;
    # docs/bench/sweep/ab.md run 4, tuned-below/).
    if fits_two_blocks(need, schedule.threads) and not (may_unstage and need > cap >= unstaged_need):
        why = f"two blocks per SM: ~{need} registers a thread would leave room for one; the launch bound caps them at {cap}"
        return replace(schedule, blocks_per_sm=2, reasons=schedule.reasons + (why,))
    if may_unstage and fits_two_blocks(unstaged_need, schedule.threads):
        why = (
            f"two blocks per SM with the side inputs read where they are used: staged they would take ~{need} "
            f"registers a thread, over the {cap} the launch bound caps them at; read where used, ~{unstaged_need}"
        )
        return replace(unstaged, blocks_per_sm=2, reasons=unstaged.reasons + (why,))
    return replace(schedule, blocks_per_sm=1)


# A fragment row that an SM holds in two or three blocks waits at every barrier with little of its SM's
# traffic in flight, and with_fragment_residency bounds only rows its estimate keeps to one block. ptxas
# gives a thread the registers of one scheduler's share of the SM (the register file is split among its
# four schedulers, each holding whole warps: registers_allotted), so at warp counts that are not a multiple
# of four a row keeps fewer blocks than the SM's registers ÷ the block's suggest — bf16 LayerNorm 9216 on 288
# threads took 80 registers, two blocks (36 KB of rows in flight), 0.73 × copy; under a launch bound of
# three, 72 registers without a spill, 0.93–0.94; fp32 LayerNorm → FP8 5376 on 192 threads, 102 registers
# and two blocks, 0.66–0.67, bounded at three (96 registers) 0.87 (perf/probe57, probe58, H200, 16384
# tokens). Of the 94 fragment programs the planner gave the committed sweep and probe56 (ptxas's registers
# beside their speed), the nine an SM held in at most three blocks under 64 KB of rows ran under 0.90 in
# seven; of the other 85, seven — and rows of many blocks ran 0.93–1.00 under 64 KB too (LayerNorm 1536
# on 16 blocks, 0.965), so only rows of at most three blocks are bounded. The margin: ptxas fit bf16
# LayerNorm's 64 values (its row and staged weight and bias) in 72 registers, and spilled 156–492 bytes
# where the bound left fewer than 8 beside them (fp32 LayerNorm → RoPE → FP8 8960, fp16 QK-norm 14336).
# The unbounded count is estimated from the fewest registers ptxas gave beside the values (16), so that
# only rows that surely keep few blocks are bounded. Under 56 registers the 8 beside the values were too
# few: 448 threads under a bound of four (32 registers, 24 values) spilled 28–56 bytes and ran 12–15 %
# slower than before, 352 under four (40) spilled 8 (perf/probe59); every bound that left 56 or more ran
# without a spill.
FILLED_SM_BYTES_IN_FLIGHT = 64 * 1024
FILLED_SM_REGISTER_MARGIN = 8
FILLED_SM_MIN_REGISTERS = 56
FILLED_SM_MAX_BLOCKS = 3
FILLED_SM_FEWEST_BESIDE_VALUES = 16
SM_SCHEDULERS = 4
MAX_THREAD_REGISTERS = 255


def registers_allotted(blocks: int, threads: int) -> int:
    """Registers a thread gets under a launch bound of `blocks` blocks of `threads` an SM, as ptxas sizes it:
    the register file is split among the SM's schedulers, each holding whole warps."""
    warps_per_scheduler = -(-blocks * (threads // WARP_THREADS) // SM_SCHEDULERS)  # whole warps: threads are a multiple of 32
    per_thread = SM_REGISTERS // SM_SCHEDULERS // (warps_per_scheduler * WARP_THREADS)
    return min(MAX_THREAD_REGISTERS, per_thread // REGISTER_ALLOCATION_UNIT * REGISTER_ALLOCATION_UNIT)


def resident_blocks(registers: int, threads: int) -> int:
    """Blocks of `threads` an SM holds when each thread takes `registers` (the scheduler split as in
    registers_allotted), within the SM's thread and block limits."""
    most = min(MAX_BLOCKS_PER_SM, SM_THREADS // threads)
    return max((b for b in range(1, most + 1) if registers_allotted(b, threads) >= registers), default=1)


def filled_sm(spec: KernelSpec, fragment: Schedule, side_inputs: tuple[Tensor, ...]) -> tuple[int, str] | None:
    """The launch bound (blocks per SM) the fragment program `fragment` (one row a block, left unbounded by
    with_fragment_residency) takes to keep FILLED_SM_BYTES_IN_FLIGHT of rows loading an SM, or the most
    blocks toward it whose registers (at least FILLED_SM_MIN_REGISTERS) still hold each thread's row values
    and staged side inputs with FILLED_SM_REGISTER_MARGIN beside them; None where its blocks load that much
    already, are more than FILLED_SM_MAX_BLOCKS, or no larger bound holds them. With the bound, why."""
    if (
        spec.schedule.blocks_per_sm != "auto"
        or fragment.variant != "fragment"
        or fragment.blocks_per_sm != 1
        or fragment.block_m > 1
        or fragment.row_split > 1
    ):
        return None
    row_bytes = fragment.padded_hidden * DTYPE_BYTES[spec.dtype] + sum(t.bytes_per_token() for t in side_inputs if t.per_token_row)
    values = fragment.elems_per_thread + (_staged_words(spec, fragment, side_inputs) if fragment.prefetch else 0)
    resident = resident_blocks(values + FILLED_SM_FEWEST_BESIDE_VALUES, fragment.threads)
    if resident > FILLED_SM_MAX_BLOCKS or resident * row_bytes >= FILLED_SM_BYTES_IN_FLIGHT:
        return None
    wanted = min(-(-FILLED_SM_BYTES_IN_FLIGHT // row_bytes), SM_THREADS // fragment.threads, MAX_BLOCKS_PER_SM)
    for blocks in range(wanted, resident, -1):
        allotted = registers_allotted(blocks, fragment.threads)
        if values + FILLED_SM_REGISTER_MARGIN <= allotted and allotted >= FILLED_SM_MIN_REGISTERS:
            return blocks, (
                f"{blocks} blocks per SM under a launch bound: unbounded, ~{resident} would keep {resident * row_bytes // 1024} KB "
                f"of rows loading an SM; bounded, each thread keeps {allotted} registers for its {values} values"
            )
    return None


# A float32 row that writes only FP8 moves the fewest bytes a column of any chain (4 in, 1 out), so the
# time a block spends between its load and its stores — its reductions, and the group scales — is the
# largest share of its row's time, and an SM needs the most blocks to keep loads in flight through it; yet
# its staged float32 side inputs (two words a value for LayerNorm's weight and bias) keep it to the fewest.
# Timed on the H200 (16384 tokens, both programs in one run, outputs checked against the reference), bounded
# at 24 warps an SM with the side inputs read where used, over the fragment programs the planner's estimate
# held in at most four blocks:
# - perf/probe62 (fp32 LayerNorm → (RoPE →) FP8, nine rows): all gained, 4–43 % — 5248 0.68 → 0.97 × copy,
#   4736 0.77 → 0.94, 11264 0.80 → 0.94, 7936 0.90 → 1.01, the sweep's 2880 0.93 → 0.99;
# - perf/probe64, a fresh draw of every chain that can write only FP8 (22 rows): LayerNorm (→ RoPE) → FP8
#   +3–20 % (9088 0.80 → 0.96, 6784 0.85 → 0.99), RMSNorm → RoPE → FP8 4864 0.85 → 0.98, QK-norm → cache
#   RoPE → FP8 9344 0.76 → 0.91, RMSNorm → cache RoPE → FP8 7808 0.77 → 0.91; RMSNorm → FP8 and add →
#   RMSNorm → FP8, already at 1.00–1.05, within 1 % (geometric mean 1.07, worst −0.9 %).
# Not taken: at nine blocks (the sweep's LayerNorm → RoPE → FP8 1536 on 64 threads) the bound lost 7 %; over
# the stream wide_stream plans it moved eleven rows −18 … +19 % (probe64), over a reread row −3 … +1 %; 16-bit
# rows writing only FP8 and rows writing a row lost 1–13 % under it (probe62: their stores keep the memory
# busy through the waits, and where ptxas gave more blocks than the estimate they lost the staging). ptxas
# spilled at most 8 bytes where the unstaged estimate (fragment_registers) left FP8_ROW_SPARE_REGISTERS of
# the bound's registers spare; past it (LayerNorm → FP8 in groups of 32 at 14464 and 15360, 60 values a
# thread, 92 estimated against 80) 116–132 bytes, and those rows lost 13–16 %.
# 24 warps an SM (768 threads) is also what `fusegen tune --quick` times beside the planner's program
# (tune.QUICK_FULL_SM_THREADS): perf/probe61's full tunes were won there.
FULL_SM_WARPS = 24
FP8_ROW_MAX_FRAGMENT_BLOCKS = 4
FP8_ROW_SPARE_REGISTERS = 4


def fp8_row_full_sm(spec: KernelSpec, fragment: Schedule, side_inputs: tuple[Tensor, ...], waits: RowWaits) -> tuple[int, str] | None:
    """The launch bound (blocks per SM) a float32 row that writes only FP8 takes toward FULL_SM_WARPS
    warps an SM, its side inputs then read where used, over `fragment` (the planner's fragment program of one
    row a block, which its estimate holds in at most FP8_ROW_MAX_FRAGMENT_BLOCKS blocks), with why; None
    elsewhere, where the bound adds no block, its registers would not hold the row, or hints pin either."""
    hints = spec.schedule
    if (
        spec.dtype != "float32"
        or waits.writes_row
        or hints.blocks_per_sm != "auto"
        or hints.prefetch is True
        or fragment.variant != "fragment"
        or fragment.block_m > 1
        or fragment.row_split > 1
    ):
        return None
    held = fragment_blocks_per_sm(fragment, side_inputs)
    blocks = min(MAX_BLOCKS_PER_SM, FULL_SM_WARPS // (fragment.threads // WARP_THREADS))
    if held > FP8_ROW_MAX_FRAGMENT_BLOCKS or blocks <= held:
        return None
    need = fragment_registers(replace(fragment, prefetch=False), side_inputs)
    allotted = registers_allotted(blocks, fragment.threads)
    if need + FP8_ROW_SPARE_REGISTERS > allotted:
        return None
    return blocks, (
        f"{blocks} blocks per SM under a launch bound, the side inputs read where they are used: a float32 row that writes "
        f"only FP8 waits longest between its load and its stores, and ~{held} block(s) an SM would keep too few loads in "
        f"flight through it; bounded, each thread keeps {allotted} registers for ~{need}"
    )


# The rules above size a fragment program's launch bound from the planner's register estimate, which misses
# ptxas's count both ways: filled_sm expected six blocks of bf16 QK-norm → cache RoPE 4608 on 192 threads
# where ptxas, unbounded, took 70 registers and kept four (perf/probe73). What ptxas gave each program is
# known once it is compiled (compile.ptxas_resources, no GPU), so `fusegen build` compiles the planner's
# program, and where ptxas's registers (or its bound) keep it in fewer than FULL_SM_WARPS warps an SM,
# compiles it again under one to PTXAS_BOUND_EXTRA_BLOCKS more blocks and keeps the most that ptxas met
# without a spill (build.stage). Held out before it was built (perf/probe74, H200, 16384 tokens: a fresh draw,
# 18 rows held in at most 24 warps that had such a bound; the same code under another bound): 1.050 × in
# geometric mean, eight rows faster by 4–24 % — fp16 LayerNorm → rescale → RoPE → FP8 8192 0.72 → 0.89 × copy
# (three blocks of 256 at 80 registers, ptxas had kept two at 115), fp16 RMSNorm → rescale → RoPE → FP8 11264
# 0.70 → 0.86, bf16 LayerNorm → rescale → RoPE 4096 0.77 → 0.92, bf16 LayerNorm → rescale → RoPE → FP8 6656
# 0.65 → 0.75 —, nine within 1 %, one 1.8 % slower (bf16 LayerNorm → FP8 14336, two blocks of 256 → three).
# None of the five rows held in 24 warps gained (−0.6 … −0.1 %), and the model library's QK-norm → RoPE
# kernels held there lost 2–3 % under eight blocks of 128 (Qwen3-8B q 0.93 → 0.91, Gemma 3 q 0.94 → 0.91;
# perf/probe75): 24 warps fill the SM (fp8_row_full_sm), so the rule takes rows held in fewer — over
# probe74's 13 such rows 1.072 ×. Where the tighter bound spilled, probe73's gains shrank or turned, so a bound
# that spills is never kept: keeping those spilling under PTXAS_SPILL_RELAX_BYTES (after two held-out
# 14336-column rows gained 9 and 21 % so in perf/probe95's tune) lost on a fresh draw — 12 programs it changed,
# 0.978 × geometric mean, 10 slower by up to 6 %, one 6 % faster (perf/probe96). Programs tuned, hinted or split
# keep what they have; those of several rows a block are not raised (a spilling one is lowered: below).
PTXAS_BOUND_EXTRA_BLOCKS = 3
# The other way: the planner's own bound (its register estimate's, or a rule's) that ptxas meets only by
# spilling. Timed on the H200 (perf/probe84, 16384 tokens: seven fragment programs the planner bounded at two
# blocks an SM that ptxas spilled, each against the same code under one block fewer): where ptxas spilled
# 48–96 bytes a thread the bound of one block fewer won on all three, by 9–13 % (fp32 RMSNorm → FP8 g8 with
# column scales 5120 on 4 rows × 128 threads 0.68 → 0.74 × copy, fp32 add → LayerNorm → cache RoPE → FP8 4096
# 0.83 → 0.93, fp16 RoPE → FP8 18432 on 576 threads 0.66 → 0.74); where it spilled 8–24 bytes (a few words,
# reloaded once) the spilling bound won three of four, by up to 46 % — the blocks it keeps outweigh them. So
# `fusegen build` compiles a planner's fragment or reread program that spilled at least this many bytes under
# each lower bound and keeps the most blocks ptxas meets without a spill. Held out (perf/probe85: 13 fresh
# programs the rule lowers, of 120 drawn with bounds of two blocks or more): 1.16 × geometric mean, 11 faster
# (fp32 RMSNorm → RoPE 24576 0.37 → 0.94, fp16 add → LayerNorm → FP8 24576 0.81 → 0.97), two slower by 3 and 5 %
# at 32 and 40 bytes spilled.
PTXAS_SPILL_RELAX_BYTES = 32
# Except a fragment program bounded at two blocks whose kernel writes no row in the activations' dtype (only
# FP8 and its scales): lowered to one, the SM loads nothing while its one row waits at each reduction, and no
# stores of a Y or residual_out row fill those waits. Both of probe85's losses were such rows, and so was fp16
# LayerNorm → rescale → RoPE → FP8 24576 (perf/probe122, H100: 0.74 × copy lowered, 0.96 on its two blocks).
# Held out on the H100 (perf/probe123: every program the rule lowered among 420 fresh draws, against the
# same code under its planned bound, 16384 tokens, bit-identical): FP8-only rows at 32–64 bytes spilled, nine,
# **1.150 × geometric mean** kept at two blocks (0.984–1.368 ×); FP8-only rows at 80 bytes or more, twelve,
# 0.767 × (lowering wins as it did); rows writing Y or residual_out, 13 at 32–184 bytes, 0.789 × (at 32–56
# bytes, four, 0.856 ×), and the one FP8-only bound of four at 56 bytes 0.891 ×: lowered as before.
PTXAS_SPILL_KEEP_TWO_BLOCKS_BYTES = 72


def spill_kept(schedule: Schedule, stack_bytes: int, writes_row: bool) -> str:
    """Why `fusegen build` keeps a planner's bound under which ptxas spilled `stack_bytes` a thread (the
    kernel writing a row in the activations' dtype or not: `writes_row`), or "" where it lowers the bound
    (ptxas_bound_trials)."""
    if stack_bytes < PTXAS_SPILL_RELAX_BYTES:
        return "a few words, which ran faster than one block fewer"
    if (
        schedule.variant == "fragment"
        and schedule.blocks_per_sm == 2
        and not writes_row
        and stack_bytes < PTXAS_SPILL_KEEP_TWO_BLOCKS_BYTES
    ):
        return "two blocks an SM, which ran faster than one for a row that writes only FP8"
    return ""


def ptxas_bound_trials(spec: KernelSpec, schedule: Schedule, registers: int, stack_bytes: int = 0, *, writes_row: bool) -> tuple[int, ...]:
    """The launch bounds (blocks per SM) `fusegen build` compiles a planner's program under, where ptxas gave
    it `registers` a thread and a `stack_bytes` frame under its own bound (the kernel writing a row in the
    activations' dtype or not: `writes_row`): a fragment or reread program whose spill spill_kept does not keep,
    under each fewer block; a fragment program of one row a block that keeps fewer than FULL_SM_WARPS warps an
    SM, under one to PTXAS_BOUND_EXTRA_BLOCKS more blocks than it holds, within the SM's limits. Empty where
    the rules leave the program as planned."""
    if spec.schedule.blocks_per_sm != "auto" or schedule.row_split > 1:
        return ()
    if stack_bytes >= PTXAS_SPILL_RELAX_BYTES and schedule.variant in ("fragment", "reread"):
        kept = spill_kept(schedule, stack_bytes, writes_row)
        return () if kept else tuple(range((schedule.blocks_per_sm or 1) - 1, 0, -1))
    if schedule.variant != "fragment" or schedule.block_m > 1:
        return ()
    held = max(schedule.blocks_per_sm or 1, resident_blocks(registers, schedule.threads))
    if held * schedule.threads // WARP_THREADS >= FULL_SM_WARPS:
        return ()
    most = min(MAX_BLOCKS_PER_SM, SM_THREADS // schedule.threads, held + PTXAS_BOUND_EXTRA_BLOCKS)
    return tuple(range(held + 1, most + 1))


# Wide rows that an SM holds in few fragment blocks, each row waiting more than once after its load: a
# fragment block loads its row, then waits at each block-wide reduction (a barrier) with none of its own
# loads in flight, so with few blocks an SM's loads stall through every wait. A stream block keeps its next
# row's copy in flight meanwhile — but holds more registers and reads the row back from shared memory, which
# costs where the stalls were hidden anyway. Timed on the H200 (perf/probe16, perf/probe17: 43 specs, both
# variants of each in one run, 16384 tokens), among specs whose fragment program keeps at most four blocks
# an SM under 64 KB of rows and whose rows wait twice or more:
# - writing only FP8 (no row in the activations' dtype: the least traffic a column, so the waits weigh
#   most), the stream won 8 of 12 — bf16 RMSNorm → RoPE → FP8 10240 0.62 → 0.95 × copy, fp16 7168 0.74 →
#   0.92, fp16 LayerNorm → RoPE → FP8 g128 8192 0.47 → 0.82, fp32 LayerNorm → FP8 g32 5120 0.80 → 0.95,
#   fp16 LayerNorm → FP8 10240 0.66 → 0.76 — and lost 2–3 % on three bf16 LayerNorm → FP8 chains, 14 % on
#   fp32 LayerNorm → per-token FP8 5120 (0.92 → 0.79);
# - writing a row too (Y, residual_out), the fragment program's stores keep the memory busy through its
#   waits: it won 11 of 14 by 4–22 % (LayerNorm, LayerNorm → RoPE, add → RMSNorm → FP8 at 3072–12288),
#   losing only on fp16 LayerNorm (→ RoPE) 12288 (4–13 %).
# On 14 specs held out from that fit (perf/probe18) the stream this rule plans won 10, by 3–65 %, and lost
# 1–8 % on four (three of them fp32 RMSNorm chains): 1.16 × the fragment program's speed, geometric mean.
# The blocks counted are fragment_blocks_per_sm's, from the planner's register estimate, which allows one
# block fewer than ptxas's registers do on most sweep kernels (NOTES.md step 39): the threshold of four was
# fitted on that count.
# Rows that gather a table row at the token's position (RoPE's cache) stay fragment programs. The stream
# had won on them (perf/probe17: bf16 QK-norm → cache RoPE 8192 0.65 → 0.81; probe32–36: fp32 RMSNorm →
# cache RoPE → FP8 6144 0.74–0.81 → 0.94–0.97, bf16 QK-norm 4608 on 192 threads 0.72–0.76 → 0.82–0.92)
# against fragment programs whose staged cache row was loaded under a thread guard, which ptxas issued
# after the row's arithmetic. Loaded on every thread (plan.whole_thread_extent) the fragment program won
# back: `fusegen tune --quick` of 11 streamed rows found it 1.03–1.30 × faster on 8 (perf/probe69), and on
# 34 held-out rows (perf/probe70: 25 of 300 drawn chains with cache RoPE that the streams took, 9 of the
# rows they were fitted on) it ran 1.09 × the stream in geometric mean, 29 faster (up to 2.0 ×: fp32
# RMSNorm → rescale → cache RoPE → FP8 3328, 0.38 → 0.77 × copy), five 1–8 % slower.
# Rows that read a per-token row the ring does not carry (add_residual's residual, loaded in the row's own
# layout so that residual_out may alias it) stay fragment programs: a streamed row still loads as many bytes
# again with none of them in flight, which is the stall the stream exists to hide. The fit above had no such
# row writing only FP8 (its add chains wrote residual_out). The seven of perf/probe111–112 ran faster as the
# fragment program on both cards (H100 1.02–1.48 ×, H200 1.02–1.78 ×: fp32 add → LayerNorm → FP8 g256 5120
# 0.57 → 1.01 × copy); held out on 20 fresh streams (perf/probe118, an H100) it ran 1.053 × the stream in
# geometric mean, faster on all 20 (1.01–1.63 ×).
# The stream's threads: the fewest powers of two from four warps (one per scheduler) that give each at
# most 56 values in whole 16-byte vectors; the winners held 32–56, and at 64 a thread (bf16 LayerNorm
# 8192 on 128 threads) the stream ran 0.82 against the fragment program's 0.92. Where no power of two holds
# the row in whole 16-byte vectors, the planner's own count may: fp32 LayerNorm → FP8 5376 streamed on 192 threads ran 0.95 and 0.87 ×
# copy in two runs against the fragment program's 0.66–0.67, fp16 QK-norm → cache RoPE 8960 on 224 threads
# 0.85 against 0.79–0.80 (perf/probe57, probe58), fp32 LayerNorm → FP8 4480 on 160 and 6912 on 192 0.93 and
# 0.95 against 0.88 and 0.73 (perf/probe59); but bf16 RMSNorm → FP8 6912 on 288 threads, three 16-byte
# vectors a thread, 0.77 against 0.91, and 4352 on 544 × one vector 0.60 against 0.46 where 192 threads
# padded ran 0.89: the own count streams where a thread holds four 16-byte vectors or more. Twice the
# threads (perf/probe68, 25 rows streamed at 40–56 values a thread) lost on 16 — 16-bit rows by up to
# 3.4 × — and won on six (four float32 rows by 5–17 %, two 16-bit ones by 4–10 %), float32 rows losing
# 4–25 % as well: the bound stays.
WIDE_STREAM_OWN_COUNT_MIN_BYTES = 64
WIDE_STREAM_MAX_FRAGMENT_BLOCKS = 4
WIDE_STREAM_FRAGMENT_BYTES_IN_FLIGHT = 64 * 1024
WIDE_STREAM_MIN_WAITS = 2
WIDE_STREAM_MIN_THREADS = 4 * WARP_THREADS
WIDE_STREAM_MAX_ELEMS_PER_THREAD = 56
# A stream of one block an SM has nothing to run while that block reduces, and lost wherever it was timed:
# gathering rows (bf16 cache RoPE 12288 −23 %, perf/probe17), cache RoPE at 12288 and 16384 columns
# (−15–25 %, perf/probe26), add → LayerNorm → per-token FP8 bf16 10240, which writes FP8 alone (0.61 × copy
# streamed, 0.96 as the planner's fragment program, perf/probe50). A row whose stream holds only one block
# stays a fragment program.
STREAM_MIN_BLOCKS = 2


def fragment_blocks_per_sm(schedule: Schedule, side_inputs: tuple[Tensor, ...]) -> int:
    """Blocks of a fragment schedule an SM holds: its launch bound where it sets one, else as many as its
    estimated registers (fragment_registers) and threads leave room for."""
    if schedule.blocks_per_sm and schedule.blocks_per_sm > 1:
        return schedule.blocks_per_sm
    by_registers = SM_REGISTERS // (schedule.threads * fragment_registers(schedule, side_inputs))
    return max(1, min(MAX_BLOCKS_PER_SM, SM_THREADS // schedule.threads, by_registers))


# A row whose scales leave in short column-major runs (groups of 8–16 with scale_layout "column") is the
# fragment program of several rows a block that sector_rows stages them in, neither a stream nor a reread
# (wide_reread): both store each row's scales alone, one L2 write request a group as one row a block does, which
# lost 1.1–2.6 × to the staged rows (perf/probe51–52). Streamed, such rows ran 0.31 and 0.70 × copy where the
# staged fragment program ran 0.72 and 0.96 (perf/probe111 on an H100: bf16 LayerNorm → FP8 g8 7168, fp32
# LayerNorm → rescale → FP8 g16 3072); held out on four more (perf/probe112, H100), 1.10–1.90 × the stream.
def wide_stream(spec: KernelSpec, fragment: Schedule, side_inputs: tuple[Tensor, ...], waits: RowWaits) -> Schedule | None:
    """The row schedule of the stream program variant "auto" takes instead of `fragment` (the planner's
    route of many tokens), or None where the fragment program stays."""
    row_bytes = fragment.padded_hidden * DTYPE_BYTES[spec.dtype]
    blocks = fragment_blocks_per_sm(fragment, side_inputs)
    if (
        spec.schedule.variant != "auto"
        or fragment.variant != "fragment"
        or fragment.block_m > 1
        or fragment.row_split > 1
        or row_bytes <= STREAM_MAX_ROW_BYTES
        or waits.gathers
        or waits.barriers < WIDE_STREAM_MIN_WAITS
        or waits.writes_row
        or waits.unstaged_rows
        or blocks > WIDE_STREAM_MAX_FRAGMENT_BLOCKS
        or blocks * row_bytes >= WIDE_STREAM_FRAGMENT_BYTES_IN_FLIGHT
        or sector_rows(spec, fragment) is not None
    ):
        return None
    if spec.schedule.prefetch is False and any(t.per_token_row for t in side_inputs):
        return None  # the per-token side inputs would be read after the reductions: the stall the ring hides
    row = _stream_row(spec, fragment)
    if row is None:
        return None
    why = (
        f"variant auto → stream: the fragment program would keep ~{blocks} block(s) of this {row_bytes}-byte row an SM "
        f"({blocks * row_bytes // 1024} KB in flight), each row waiting {waits.barriers} times after its load "
        "with none of its block's loads in flight, and the kernel writes only FP8; untuned, the build compiles that "
        f"fragment program too and keeps it where ptxas holds more than {WIDE_STREAM_MAX_FRAGMENT_BLOCKS} blocks of it an SM "
        "(fragment_over_stream_blocks)"
    )
    return _taken_stream(spec, replace(row, variant="stream", reasons=row.reasons + (why,)), side_inputs, waits)


def _stream_row(spec: KernelSpec, fragment: Schedule) -> Schedule | None:
    """The row layout a stream of `fragment`'s row takes: the fewest power-of-two threads from four warps (or
    the fragment's own count, where a thread of it holds WIDE_STREAM_OWN_COUNT_MIN_BYTES) that hold at most
    WIDE_STREAM_MAX_ELEMS_PER_THREAD values in whole 16-byte vectors the ring can copy; None where none does."""
    multiple = columns_multiple(spec)
    own_bytes = fragment.elems_per_thread * DTYPE_BYTES[spec.dtype]
    own = () if power_of_two(fragment.threads) or own_bytes < WIDE_STREAM_OWN_COUNT_MIN_BYTES else (fragment.threads,)
    for threads in POWER_OF_TWO_THREADS + own:
        if threads < WIDE_STREAM_MIN_THREADS or spec.schedule.threads not in ("auto", threads):
            continue
        try:
            row = _row_schedule(spec, 1, threads, multiple, threads_by="the stream's fewest threads holding the row in 16-byte vectors")
        except ChainError:  # the row does not fit in registers at this thread count
            continue
        if row.elems_per_thread <= WIDE_STREAM_MAX_ELEMS_PER_THREAD and row.vector_bytes == 16 and _ring_splits_evenly(spec, row):
            return row
    return None


def _taken_stream(spec: KernelSpec, streamed: Schedule, side_inputs: tuple[Tensor, ...], waits: RowWaits) -> Schedule | None:
    """`streamed` where its ring and grid fit and keep STREAM_MIN_BLOCKS an SM, else None."""
    sized = _sized_stream(spec, streamed, side_inputs, waits)
    return streamed if sized is not None and sized.blocks_per_sm >= STREAM_MIN_BLOCKS else None


def _sized_stream(spec: KernelSpec, streamed: Schedule, side_inputs: tuple[Tensor, ...], waits: RowWaits) -> Schedule | None:
    """`streamed` with its side inputs staged and its ring and grid sized, as _planned_route will size it;
    None where the ring, or the stream's token bound, does not fit this spec."""
    try:
        return with_stream(spec, with_prefetch(spec, streamed, side_inputs, waits.after_gather), side_inputs)
    except ChainError:
        return None


def wide_streamed(spec: KernelSpec, schedule: Schedule) -> bool:
    """Whether `schedule`, the planner's for `spec`'s route of many tokens, is wide_stream's stream: variant
    "auto" streaming a row longer than the short rows _stream_by_default streams."""
    return spec.schedule.variant == "auto" and schedule.variant == "stream" and spec.hidden * DTYPE_BYTES[spec.dtype] > STREAM_MAX_ROW_BYTES


# wide_stream counts the fragment program's blocks from the planner's register estimate, as it was fitted
# (above); ptxas, under the bound it meets (ptxas_bound_trials), often gives it more. Timed against the streams
# they replaced, fragment programs an SM holds more of as compiled won: on the H200, 16-bit LayerNorm →
# per-token FP8 at 5120, 6144 and 7168 columns, six or seven blocks compiled where the estimate said four, 1.14–1.22 ×
# (perf/probe109, 0.773 → 0.939 × copy at 5120); on the H100 (perf/probe111: 24 fresh streamed draws, the
# sweep's two streams) the eight holding five to eight blocks compiled 1.018–1.182 ×, 1.072 × in geometric mean,
# none slower. So `fusegen build` compiles the fragment program a wide_stream stream replaced (variant
# "fragment" planned the same: the other rules and bounds still apply) and keeps it where an SM holds more than
# WIDE_STREAM_MAX_FRAGMENT_BLOCKS of it without a spill the build would relax. On that H100 the fragment program
# won at two to four compiled blocks as well (18 pairs, 3–14 %, and 1.38 and 2.28 × on two of 512 threads), where
# the stream was fitted on the H200: those stay streams until an H200 times them (perf/probe112, whose 21 held-out
# streams the fragment program also won on the H100, 1.170 × geometric mean). Where the stream's threads are not
# variant "fragment"'s, the build weighs the fragment program on them too and keeps the one an SM holds more of:
# fp16 LayerNorm → per-token FP8 6144 holds four blocks on variant "fragment"'s 256 threads and six on the
# stream's 128 (80 registers), which ran 1.17 × the stream on the H100 (perf/probe121) and 1.14 × on the H200
# (perf/probe109); of 30 streams the build kept among 12000 unhinted draws one moved so (fp32 RMSNorm → RoPE →
# FP8 7168, five blocks, 1.22 × on the H100), while on the other 29, where neither program holds more than four
# blocks, the fragment program ran 0.87–1.20 × the stream on that card: the threshold stands.
def fragment_over_stream_blocks(schedule: Schedule, registers: int, stack_bytes: int) -> int | None:
    """Blocks an SM holds of the fragment program `schedule` that wide_stream's stream replaced, as ptxas
    compiled it (`registers` a thread, a `stack_bytes` frame), where that is more than
    WIDE_STREAM_MAX_FRAGMENT_BLOCKS without a spill of PTXAS_SPILL_RELAX_BYTES or more: the build keeps it
    over the stream; None where the stream stays."""
    if schedule.variant != "fragment" or stack_bytes >= PTXAS_SPILL_RELAX_BYTES:
        return None
    held = max(schedule.blocks_per_sm or 1, resident_blocks(registers, schedule.threads))
    return held if held > WIDE_STREAM_MAX_FRAGMENT_BLOCKS else None


# A row that gathers a table row at the token's position (RoPE's cache) waits on two loads in turn before it
# can rotate, besides its barriers. Fewer threads holding more of its values each keep more rows in flight
# an SM to cover those waits: timed on the H200 (perf/probe27, 16384 tokens, the fragment program on the
# planner's 192 or 256 threads against 128, and the stream), QK-norm → cache RoPE over heads of 128 ran
# 0.90–0.96 × copy on four warps at 4608, 6144 and 8192 16-bit columns, 0.66–0.73 on six or eight and
# 0.82–0.89 streamed; fp32 7168 0.98, against 0.92–0.94; RMSNorm → cache RoPE read where used 0.94–0.95 on
# four warps, 0.89–0.93 on six or eight (8192: −1 %). At 7168, where the planner's row is on four warps
# already, the fragment program and the stream were even (0.87–0.92 against 0.88–0.89), and read where used
# the fragment program ran 0.97 against the stream's 0.88: the row stays a fragment program. A row with a
# reduction after its RoPE keeps its staging (_gathered_where_used), and staged on four warps RMSNorm →
# cache RoPE → FP8 in groups of 128 ran 0.64–0.75 (perf/probe29): such rows are left to the other rules.
GATHERING_ROW_THREADS = 4 * WARP_THREADS


def gathering_row(spec: KernelSpec, schedule: Schedule, side_inputs: tuple[Tensor, ...], waits: RowWaits) -> Schedule | None:
    """The fragment schedule a row that gathers takes over choose_schedule's `schedule` on the planner's
    route of many tokens: on GATHERING_ROW_THREADS threads where they hold it in 16-byte vectors padded by
    at most an eighth, never streamed; where an op's code crowds four warps (ops.Op.crowds_few_warps) with
    registers a launch bound eases, under the bound that holds the row's values and its staged `side_inputs`
    (_few_warps_bound). None where the row is on fewer, has no such layout, a reduction follows the gather,
    the crowding has no such bound, or hints pin it."""
    hints = spec.schedule
    if (
        not waits.gathers
        or waits.reduces_after_gather
        or _row_layout_pinned(hints)
        or schedule.variant != "fragment"
        or schedule.block_m > 1
        or schedule.row_split > 1
        or schedule.threads < GATHERING_ROW_THREADS
    ):
        return None
    row = schedule
    if schedule.threads > GATHERING_ROW_THREADS:
        why = (
            f"a row that gathers a table row at the token's position waits on two loads in turn: on {GATHERING_ROW_THREADS // WARP_THREADS} "
            "warps, each thread holding more of it, an SM keeps more rows in flight through those waits than on more warps"
        )
        try:
            row = _row_schedule(spec, 1, GATHERING_ROW_THREADS, columns_multiple(spec), threads_by=why)
        except ChainError:  # the row does not fit four warps
            return None
        if row.vector_bytes < 16 or row.padded_hidden - spec.hidden > spec.hidden // MAX_PADDING_SHARE:
            return None
    crowding = _crowding_stages(spec, row)
    if crowding:
        bound = _few_warps_bound(spec, row, crowding, side_inputs)
        if bound is None or hints.blocks_per_sm != "auto":
            return None
        if bound == FEW_WARPS_OVERFLOW:
            return _overflowing_stream(spec, schedule, side_inputs, waits)
        why = (
            f"{bound} blocks per SM: the {row.elems_per_thread} values a thread of an op whose code crowds four warps "
            "take registers a launch bound squeezes without a loss, and more rows stay in flight"
        )
        row = replace(row, blocks_per_sm=bound, reasons=row.reasons + (why,))
    fragment = "variant auto → fragment, not the stream: on four warps a row that gathers ran at least as fast as a fragment program"
    return replace(row, reasons=row.reasons + (fragment,)) if hints.variant == "auto" else row


def _crowding_stages(spec: KernelSpec, row: Schedule) -> tuple[Stage, ...]:
    """The stages of the chain, planned on `row`'s layout, that say they crowd a few warps (ops.Op.crowds_few_warps)."""
    context = chain_context(spec, row.layout(spec.hidden))
    stages = (REGISTRY[op.kind].plan(op, index, context) for index, op in enumerate(spec.op))
    return tuple(stage for stage in stages if REGISTRY[stage.kind].crowds_few_warps(stage))


# A 16-bit row on four warps whose crowding is registers alone (ops.Op.bound_eases_few_warps: a RoPE whose neox
# partners sit four lanes apart over whole heads of 64): ptxas gives it ~168 registers a thread, three blocks
# an SM. Timed on the H200 (16384 tokens, QK-norm → cache RoPE): a launch bound of six ran 0.97 × copy at bf16
# and fp16 6144 (48 values a thread) and 0.96 at fp16 7168 (56), against 0.83–0.93 unbounded or streamed;
# at bf16 8192 (64 values) six ran 0.85 (80 registers, no spill in its SASS) and five 0.93 (perf/probe29,
# probe32). At 4608 (36 values) six ran 0.89 and the stream 0.92 (the row stays off four warps); wider
# rows were not timed. Held out (perf/probe37, 15 norm → cache RoPE chains of 6144–8192): eleven gained
# 3–15 %; the four LayerNorms over the whole row lost 2 × (0.36–0.40 against 0.50–0.76), spilling 354–372
# bytes a thread: their staged weight and bias take as many registers as the row. The bound holds only where
# the row's fp32 values and the staged words of its per-column side inputs fit the registers it leaves a
# thread: within that, ptxas spilled at most 80 bytes (RMSNorm 8192 under five, 0.82 against 0.80
# streamed), past it 104–488 (perf/probe37, probe39, probe40: 61 bounded programs). Past it a stream ran
# best where the row can stream (perf/probe39, LayerNorm → cache RoPE 6144–8192: streamed 0.70–0.77, on four
# warps under four blocks 0.69–0.73, under three 0.61–0.65); at 6656, whose 16-byte vectors do not split the
# row evenly for the stream's copy, four warps under four blocks ran 0.69, unbounded 0.40–0.50: such a row
# takes the most blocks that hold it. Held out on the 21 of 96 random chains the fit changes (perf/probe40):
# all faster, 1.15–2.13 ×. Read where used instead, weight and bias leave the bound whole but ran +11 % to
# −10 % (perf/probe41): staged stays the default.
FEW_WARPS_BOUNDS = {56: 6, 64: 5}  # most values a thread → blocks per SM
FEW_WARPS_BOUND_MIN_ELEMS = 48
FEW_WARPS_MIN_BLOCKS = 4
FEW_WARPS_OVERFLOW = 0  # _few_warps_bound's answer where the stream takes the row
REGISTER_ALLOCATION_UNIT = 8  # ptxas gives a thread registers in multiples of this


def _few_warps_bound(spec: KernelSpec, row: Schedule, crowding: tuple[Stage, ...], side_inputs: tuple[Tensor, ...]) -> int | None:
    """The launch bound (blocks per SM) under which `row` on four warps runs despite its `crowding` stages,
    with its values and staged `side_inputs` in the registers the bound leaves a thread; FEW_WARPS_OVERFLOW
    where they overflow it and the row can stream; None where it should not go on four warps."""
    values = row.elems_per_thread
    if (
        DTYPE_BYTES[spec.dtype] != 2
        or not all(REGISTRY[stage.kind].bound_eases_few_warps(stage) for stage in crowding)
        or not FEW_WARPS_BOUND_MIN_ELEMS <= values <= max(FEW_WARPS_BOUNDS)
    ):
        return None
    bound = next(blocks for most, blocks in sorted(FEW_WARPS_BOUNDS.items()) if values <= most)
    needed = values + _staged_words(spec, row, side_inputs)

    def holds(blocks: int) -> bool:
        return needed <= registers_allotted(blocks, row.threads)

    if holds(bound):
        return bound
    if _ring_splits_evenly(spec, row):
        return FEW_WARPS_OVERFLOW
    return next((blocks for blocks in range(bound - 1, FEW_WARPS_MIN_BLOCKS - 1, -1) if holds(blocks)), None)


def _overflowing_stream(spec: KernelSpec, fragment: Schedule, side_inputs: tuple[Tensor, ...], waits: RowWaits) -> Schedule | None:
    """The stream a crowded row that gathers takes where its values and staged side inputs overflow the
    few-warps bound (perf/probe39, LayerNorm → cache RoPE 6144–8192: streamed 0.70–0.77 × copy, on four
    warps under four blocks 0.69–0.73, unbounded 0.40–0.50; the registers the staged weight and bias take
    are the cause, which loading the staged rows on every thread leaves as they were). None where it
    cannot stream."""
    row = _stream_row(spec, fragment)
    if row is None:
        return None
    why = (
        "variant auto → stream: an op's code crowds four warps, and the row's values with its staged side inputs overflow "
        "the registers of the launch bound that would hold it there"
    )
    return _taken_stream(spec, replace(row, variant="stream", reasons=row.reasons + (why,)), side_inputs, waits)


def _staged_words(spec: KernelSpec, row: Schedule, side_inputs: tuple[Tensor, ...]) -> int:
    """32-bit registers a thread of `row` holds its per-column side inputs in when they are staged: one value
    per distinct column of each it reads (a head's weight repeats in every head a thread spans)."""
    if spec.schedule.prefetch is False:
        return 0
    columns = row.layout(spec.hidden).columns_held(0)
    words = 0
    for tensor in side_inputs:
        if tensor.per_column:
            width = tensor.shape[0].size
            held = len({column % width for column in columns}) if spec.hidden % width == 0 else len(columns)
            words += -(-held * DTYPE_BYTES[tensor.dtype] // 4)
    return words


# A row under 2 KB is held by one warp (TARGET_ELEMS_PER_THREAD a thread), and a Hopper SM runs at most 32
# blocks: one row a block leaves it at most 32 warps and 32 short rows in flight, and launches a block for
# each. Several rows a block, as many as 2 KB holds and two at least, lift both limits. Timed on the H200
# (perf/probe19: 17 specs of 256–1536 columns at one, two, four and eight rows a block, in one run, at the
# sweep's counts): two 1 KB rows a block ran 0.85–0.99 × copy where one ran 0.77–0.94 (bf16 LayerNorm 512 0.85 → 0.96, fp16
# RMSNorm 512 0.89 → 0.97, fp32 RMSNorm 256 0.79 → 0.99, fp16 LayerNorm → FP8 512 0.77 → 0.85 — each
# against the stream the planner took before), bf16 RMSNorm → FP8 768 0.86 → 0.97, the other 1.25–1.5 KB
# rows within 1 %; rows of 2 KB and more within 1 % or slower (fp16 RMSNorm → FP8 1536 −1 % at two rows,
# −16 % at eight); four rows a block within 1 % of two or slower. Rows under 1 KB (perf/probe20, held out):
# one a block had run 0.20–0.61, four or eight 0.79–0.97. Rows that gather a cache row at each token's
# position lost with two where a thread holds 16 values or more (fp16 cache RoPE 768 0.99 → 0.86, bf16
# QK-norm → cache RoPE 1024 0.995 → 0.81, 512 0.96 → 0.88; perf/probe21) and won with two where it holds
# fewer (bf16 cache RoPE 256 0.50 → 0.95, fp16 QK-norm 256 0.60 → 0.94, fp16 cache RoPE 384 0.69 → 0.93,
# fp32 256 0.88 → 0.99), four a block 5–16 % under two: they take two, or one. Re-timed on the kernels of
# session 38 (perf/probe79–80, 29 drawn gathering rows under 2 KB on one warp, at one, two and four rows a
# block): at more than 16 values a thread one row still won (two a block lost 6–27 % on six of eight rows,
# the other two within 1 %); where one row a block would stream — a row of at most 1 KB at 16 values a
# thread — two won on 8 of 8, by 3–90 % (1.25 × geometric mean: fp16 512 rescale → cache RoPE → FP8 g8
# column scales 0.30 → 0.56, fp16 add → RMSNorm → cache RoPE → FP8 0.52 → 0.78, bf16 cache RoPE → rescale
# 512 0.81 → 0.97); a padded one-row fragment program of 16 values (288 columns in 512) went either way
# (−24 … +93 %) and keeps one row. Held out (perf/probe81, 12 fresh 1 KB rows and the two the unit tests had
# kept at one): 1.10 × geometric mean, nine 5–36 % faster (bf16 RMSNorm → cache RoPE → FP8 g256 column
# scales 0.70 → 0.95), two even, three 8–10 % slower (bf16 QK-norm → cache RoPE 128 0.95 → 0.87, probe21's
# row); rows under 0.90 × copy 12 → 8.
SHORT_ROWS_BLOCK_BYTES = 2048
# A row of one warp's 16-byte vectors (16-bit 256 columns, float32 128): on a warp of its own each lane holds one
# vector. Where an op asks (ops.Op.shares_one_vector_rows), short_rows gives such rows part of a warp each, as it
# does narrower ones: half a warp, two vectors a lane. Measured on the H200 (perf/probe104, fresh unhinted draws,
# untuned, at the sweep's counts, old and new programs in three interleaved rounds): over 34 such rows of every
# chain 1.071 × geometric mean, but plain and gathering rows lost up to 4 % (bf16 RMSNorm writing y and rstd
# 0.95 → 0.91, RMSNorm → cache RoPE → rescale 0.79 → 0.75), while the 18 that quantise to FP8 ran 0.995–1.34 ×.
# Held out on the 15 quantising rows that run had not timed: 1.101 ×, none slower by more than 0.6 % (fp32 128
# LayerNorm → RoPE → FP8 0.55 → 0.88, fp16 256 LayerNorm → cache RoPE → FP8 0.68 → 0.81, LayerNorm → RoPE → FP8
# 0.66 → 0.76; under 0.90 × copy 6 → 4).
ONE_VECTOR_ROW_BYTES = WARP_THREADS * 16
GATHERED_SHORT_ROWS_BLOCK_M = 2


def short_rows_block_m(row_bytes: int, gathers: bool, warp_elems: int, one_row_streams: bool) -> int:
    """Rows a block for a row of `row_bytes` on one warp holding `warp_elems` values a thread, whose one-row
    program would stream where `one_row_streams`: the most, in a power of two up to MAX_BLOCK_M, that
    SHORT_ROWS_BLOCK_BYTES holds, and at least two; where the row gathers, GATHERED_SHORT_ROWS_BLOCK_M below
    STREAM_MIN_ELEMS_PER_THREAD values a thread or in place of the stream; else 1."""
    if row_bytes >= SHORT_ROWS_BLOCK_BYTES:
        return 1
    if gathers:
        return GATHERED_SHORT_ROWS_BLOCK_M if warp_elems < STREAM_MIN_ELEMS_PER_THREAD or one_row_streams else 1
    return min(MAX_BLOCK_M, max(2, 1 << (SHORT_ROWS_BLOCK_BYTES // row_bytes).bit_length() - 1))


def short_rows(spec: KernelSpec, one_row: Schedule, waits: RowWaits, one_row_streams: bool) -> Schedule | None:
    """The fragment schedule of short_rows_block_m rows a block that block_m "auto" takes over `one_row`
    (choose_schedule's one row a block, for the planner's route of many tokens, which variant "auto" makes
    a stream where `one_row_streams`); None where that is one row or the hints pin the layout."""
    hints = spec.schedule
    row_bytes = spec.hidden * DTYPE_BYTES[spec.dtype]
    # A row that shares a warp with others (rows_share_warps) holds a few values a thread however many rows the
    # block has, so the gathering rows' limit (measured on rows of a warp each) does not bind it.
    asked = one_vector_row_sharing(spec)
    shares = rows_share_warps(spec)
    block_m = short_rows_block_m(row_bytes, waits.gathers > 0 and not shares, one_row.elems_per_thread, one_row_streams)
    if block_m == 1 or _row_layout_pinned(hints) or (not shares and block_m * one_row.threads > SM_THREADS // 2):
        return None
    why = (
        f"{block_m} rows a block, {block_m * row_bytes} bytes: one {row_bytes}-byte row a block would leave an SM "
        f"at most {HOPPER_BLOCKS_PER_SM} rows in flight, one per resident block"
    )
    try:
        _check_blocks_count_tokens(spec, block_m)
        if not shares:
            return _row_schedule(spec, block_m, block_m * one_row.threads, columns_multiple(spec), threads_by=why)
        sharing = _row_schedule(spec, block_m, None, columns_multiple(spec), share_warps=True)
    except ChainError:  # the pinned count, rounded up to whole blocks, or the layout does not fit
        return None
    return replace(sharing, reasons=sharing.reasons + (why, *asked))


# Rows a block for an output stored in short column-major runs (ops.Op.sector_rows), measured on the H200
# (perf/probe51, 18 specs with scales in groups of 8–256, untuned, at sweep counts): blocks of 2, 4 or 8 rows,
# each on the one-row plan's threads, their scales staged. Up to 512 threads a block they ran 1.1–2.1 ×
# faster than one row a block in groups of 8–16 (0.32 → 0.53, 0.48 → 0.99, 0.50 → 0.82, 0.59 → 0.79,
# 0.32 → 0.59 × copy); at 1024 threads (one block an SM) slower than at 512 on five of seven, and
# slower than one row a block where its threads already numbered 512 (0.68 → 0.64). Rows of single-element
# vectors lost at every block size (fp32 4096, RoPE: 0.85 → 0.35–0.57), and keep one row a block. Held
# out (perf/probe52, 11 chains in groups of 8–16): 1.20–2.59 × faster, every one. A block taking its eight
# rows one after another on the one-row threads (perf/probe53) was no better on the whole: 0.83–1.35 ×.
SECTOR_ROWS_MAX_THREADS = 512


def sector_rows(spec: KernelSpec, planned: Schedule) -> Schedule | None:
    """The fragment schedule of several rows a block that a chain with an output stored in short column-major
    runs takes over `planned` (the fragment schedule the planner's route of many tokens would otherwise run:
    one row a block, or short_rows' few, each on threads of its own): the most rows, up to what the op asks
    (ops.Op.sector_rows) in a power of two, whose threads (each row on as many as in `planned`) number at
    most SECTOR_ROWS_MAX_THREADS; None where that is no more rows than `planned` has, or the hints pin the
    layout."""
    hints = spec.schedule
    context = chain_context(spec)
    wanted = [asked for op in spec.op if (asked := REGISTRY[op.kind].sector_rows(op, context))]
    if not wanted or planned.rows_share_threads or planned.row_split > 1 or planned.vector_elems == 1 or _row_layout_pinned(hints):
        return None
    rows, why = max(wanted)
    row_threads = planned.threads // planned.block_m
    block_m = planned.block_m
    while block_m < rows and 2 * block_m * row_threads <= SECTOR_ROWS_MAX_THREADS:
        block_m *= 2
    if block_m == planned.block_m:
        return None
    capped = f" (not {rows}: at most {SECTOR_ROWS_MAX_THREADS} threads a block)" if block_m < rows else ""
    why = f"{block_m} rows a block{capped}, each on {row_threads} threads, staged in shared memory: {why}"
    try:
        _check_blocks_count_tokens(spec, block_m)
        return _row_schedule(
            spec, block_m, block_m * row_threads, columns_multiple(spec), threads_by=why, share_warps=row_threads < WARP_THREADS
        )
    except ChainError:  # the pinned count, rounded up to whole blocks, or the layout does not fit
        return None


# The stream variant's persistent blocks (up to 16 per SM: 2112 on an H200) earn their keep by prefetching
# their next rows; up to this many tokens a block has at most one row, and there is nothing to prefetch.
# Measured (H200, `fusegen tune`, docs/bench/sweep/tuned-below/): at 256 tokens one row per block beat the
# planner's stream on both 512-column sweep specs (bf16 LayerNorm 1.73 against 1.91 µs, fp16 RMSNorm 1.53
# against 1.72), where the stream ran 0.93 × torch.compile (docs/bench/split/).
STREAM_MIN_TOKENS = 1025


def with_variant(spec: KernelSpec, schedule: Schedule, side_inputs: tuple[Tensor, ...], stream: bool = True) -> Schedule:
    """The variant "auto" resolves to, with its resources: streamed (ring and grid sized) where a block
    takes one whole row, `_stream_by_default` says so and the ring can take the row, else the fragment
    program with its blocks per SM. `stream` False: the route serves fewer than STREAM_MIN_TOKENS tokens."""
    if schedule.variant == "stream":
        return with_stream(spec, schedule, side_inputs)
    if schedule.variant != "fragment":
        return schedule
    if spec.schedule.variant != "auto":
        return with_fragment_residency(spec, schedule, side_inputs)
    if schedule.row_split > 1 or schedule.block_m > 1:
        fragment = "variant auto → fragment: the stream variant's persistent blocks take one whole row a step"
        return with_fragment_residency(spec, replace(schedule, reasons=schedule.reasons + (fragment,)), side_inputs)
    why = _stream_by_default(spec, schedule, side_inputs)
    if why is not None and not stream:
        few = (
            f"variant auto → fragment: up to {STREAM_MIN_TOKENS - 1} tokens a stream's persistent blocks would have no next row to prefetch"
        )
        return with_fragment_residency(spec, replace(schedule, reasons=schedule.reasons + (few,)), side_inputs)
    if why is None:
        fragment = "variant auto → fragment: the whole row fits in registers, so x is read once"
        return with_fragment_residency(spec, replace(schedule, reasons=schedule.reasons + (fragment,)), side_inputs)
    if not _ring_splits_evenly(spec, schedule):
        fragment = (
            f"variant auto → fragment: {why}, but {spec.hidden} columns do not split into {schedule.threads} threads' whole "
            f'vectors, and a padded row streams only where hinted (variant = "stream"): not measured as a default'
        )
        return with_fragment_residency(spec, replace(schedule, reasons=schedule.reasons + (fragment,)), side_inputs)
    try:
        return with_stream(
            spec, replace(schedule, variant="stream", reasons=schedule.reasons + (f"variant auto → stream: {why}",)), side_inputs
        )
    except ChainError as exc:
        fragment = f"variant auto → fragment: {why}, but {exc.message}"
        return with_fragment_residency(spec, replace(schedule, reasons=schedule.reasons + (fragment,)), side_inputs)


# Measured (NOTES.md steps 13 and 15): one barrier less per row, but on one-row-per-block schedules the
# effect at 16384 tokens has no sign that holds across shapes — with RoPE by shuffle the planner's fp8
# schedule runs 1.3× faster with it at 4096 and 1.25× slower at 7168 — so it stays off there and tuning
# turns it on per bucket; in the stream variant it was 1.07–1.14× faster throughout.
DEFAULT_JOINT_REDUCTION = {"fragment": False, "stream": True}


def with_joint_reduction(spec: KernelSpec, schedule: Schedule, stages: tuple[Stage, ...]) -> Schedule:
    hint = spec.schedule.joint_reduction
    possible = schedule.builds_row and joint_span(stages) is not None
    if hint is True and not possible:
        raise ChainError(
            "schedule.joint_reduction",
            f"applies to a fragment- or stream-variant chain that ends {joint_chain()}, with only the bracketed ops between",
        )
    if not possible or not (DEFAULT_JOINT_REDUCTION[schedule.variant] if hint == "auto" else hint):
        return schedule
    crossing = (
        "fold in the row's lanes, no exchange"
        if schedule.layout(spec.hidden).reduces_within_lanes
        else "cross the warps in one exchange (one barrier per row, not two)"
    )
    reason = (
        f"the norm's sum of squares and the per-token amax {crossing}: the norm hands on x·w, RoPE is linear, the amax is "
        "taken before rstd is applied and scaled by it after; exact, as rounding is monotonic"
    )
    return replace(schedule, joint_reduction=True, reasons=schedule.reasons + (reason,))


def joint_span(stages: tuple[Stage, ...]) -> tuple[int, int] | None:
    """(opening, closing) positions of the stages that can share one exchange (ops.JointReduction): the
    stage whose op yields the per-row factor, found by that role wherever it sits, and the last stage,
    able to close the span, with only linear ops between them. None where the chain has no such pair."""
    opening = next((k for k, stage in enumerate(stages) if (j := REGISTRY[stage.kind].joint) and j.provides_factor), None)
    closing = len(stages) - 1
    if opening is None or opening == closing:
        return None
    ends = [(REGISTRY[stages[k].kind].joint, stages[k]) for k in (opening, closing)]
    if not all(joint is not None and joint.applies(stage) for joint, stage in ends):
        return None
    return (opening, closing) if all(REGISTRY[stage.kind].linear for stage in stages[opening + 1 : closing]) else None
