"""The planner: spec in, plain data out — stages, every buffer and barrier a row costs, reductions, the
schedule and why, routes per token range, the ledger, the identity. No text here."""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, replace

from . import __version__
from .errors import ChainError
from .model import DTYPE_BYTES, HOPPER_SMS, Dim, Layout, Ledger, LedgerLine, Plan, Route, Schedule, Scratch, Stage, Tensor, exchange_buffer, partial_buffers
from .ops import REGISTRY, joint_chain
from .spec import MAX_TOKENS, KernelSpec, ScheduleHints, chain_context
from .tuning import TunedRoute

# The seed's shape: the ledger in plan.json is evaluated at this many tokens unless the spec pins them.
LEDGER_TOKENS = 4096
# A block is any whole number of warps up to 1024 threads.
THREAD_CHOICES = tuple(range(32, 1025, 32))
POWER_OF_TWO_THREADS = (32, 64, 128, 256, 512, 1024)
# fp32 row elements one thread may hold: ~2 registers each with the x² scratch, so 64 keeps a thread
# under ~160 registers with no spills; 32 leaves room for two blocks per SM.
HARD_ELEMS_PER_THREAD = 64
SOFT_ELEMS_PER_THREAD = 32
# Elements per thread that measured best (H200, bf16, 4096 × 16384, NOTES.md): 128 threads holding 32
# each ran RMSNorm at 3.84 TB/s and RMSNorm → RoPE at 3.73, against 3.15 and 3.08 with 256 threads
# holding 16. TileLang's block reduction exchanges through shared memory once per halving above a warp
# (two barriers each), so fewer, fuller threads pay fewer barriers per row.
TARGET_ELEMS_PER_THREAD = 32
SHARED_BYTES_LIMIT = 48 * 1024
MAX_BLOCK_M = 16
# Side inputs loaded before the first reduction: their latency (a DRAM round trip for cos/sin, an L2
# one for weight) overlaps the row's instead of following a barrier (NOTES.md step 9).
DEFAULT_PREFETCH = True


def content_hash(spec: KernelSpec, tuned: tuple[TunedRoute, ...] = ()) -> str:
    canonical = json.dumps(
        {"spec": spec.model_dump(mode="json"), "tuned": [asdict(r) for r in tuned], "fusegen": __version__}, sort_keys=True
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def _power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _checked_hint(value, key: str, allowed: tuple[int, ...], described: str | None = None) -> int | None:
    if value == "auto":
        return None
    if value not in allowed:
        raise ChainError(key, f"must be \"auto\" or {described or 'one of ' + ', '.join(map(str, allowed))}, got {value}")
    return value


def thread_counts(spec: KernelSpec) -> tuple[int, ...]:
    """Thread counts worth considering: the powers of two, and every whole number of warps that covers
    the row in 16-byte vectors exactly (7168 fp16 = 896 vectors: 224, 448, 896 threads), which a power
    of two would cover only with narrower vectors or padding."""
    per_vector = 16 // DTYPE_BYTES[spec.dtype]
    vectors = spec.hidden // per_vector if spec.hidden % per_vector == 0 else 0
    exact = {t for t in THREAD_CHOICES if vectors and vectors % t == 0}
    return tuple(sorted(set(POWER_OF_TWO_THREADS) | exact))


def _row_schedule(spec: KernelSpec, block_m: int, threads_hint: int | None, multiple: int) -> Schedule:
    """Picks threads and vector width for a row held in registers, padding the row where hidden needs it."""
    elem = DTYPE_BYTES[spec.dtype]
    n = spec.hidden
    candidates = []
    for threads in (threads_hint,) if threads_hint else thread_counts(spec):
        vector = 16 // elem
        while vector >= 1:
            tile = threads * vector
            if tile % multiple and not _power_of_two(threads):
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
            usable = n % vector == 0 and all(REGISTRY[op.kind].accepts_layout(op, n, vector, threads) for op in spec.op)
            if per_thread <= HARD_ELEMS_PER_THREAD and usable:
                key = (
                    vector * elem < 8,  # below 8-byte accesses the loads stop saturating HBM
                    # Measured (NOTES.md step 11): at 7168, 224 threads × 16-byte vectors ran RMSNorm as fast
                    # as 256 × 8-byte, and the RoPE and LayerNorm chains 25–40 % slower; tuning may still pick them.
                    not _power_of_two(threads),
                    per_thread > SOFT_ELEMS_PER_THREAD,
                    padded - n,  # padding costs registers and idle lanes, not DRAM bytes (masked)
                    abs(math.log2(per_thread / TARGET_ELEMS_PER_THREAD)),
                    -vector,
                    threads,
                )
                candidates.append((key, threads, vector, padded, per_thread))
            vector //= 2
    if not candidates:
        where = f"with threads = {threads_hint}" if threads_hint else "even with 1024 threads"
        raise ChainError(
            "schedule.threads" if threads_hint else "hidden",
            f"a row of {n} × block_m {block_m} does not fit in registers {where} "
            f"(at most {HARD_ELEMS_PER_THREAD} elements per thread)",
        )
    _, threads, vector, padded, per_thread = min(candidates)
    why = (
        "as the threads hint asks"
        if threads_hint
        else f"closest to the {TARGET_ELEMS_PER_THREAD} per thread that keeps several loads in flight without crowding registers"
    )
    reasons = [
        f"{threads} threads × {vector}-element vectors ({vector * elem} B) cover the row in {per_thread // vector} "
        f"vector(s) per thread ({per_thread} fp32 values), {why}",
    ]
    if padded != n:
        reasons.append(
            f"hidden {n} is not a multiple of {threads}×{vector}" + (f" and the group size {multiple}" if multiple > 1 else "")
            + f": the row is padded to {padded} columns; padding loads are masked to 0 and stores are masked"
        )
    if vector * elem < 16:
        reasons.append(f"16-byte vectors would need hidden to be a multiple of {threads * 16 // elem}; {vector * elem}-byte vectors used")
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
    )


def _splitk_schedule(spec: KernelSpec, block_m: int, threads_hint: int | None, blk_k_hint) -> Schedule:
    elem = DTYPE_BYTES[spec.dtype]
    vector = 16 // elem
    if blk_k_hint == "auto":
        threads = threads_hint or 256
        while threads > 32 and threads * vector > spec.hidden:
            threads //= 2
        blk_k = min(threads * vector * 2, -(-spec.hidden // (threads * vector)) * threads * vector)
    else:
        blk_k = blk_k_hint
        if not isinstance(blk_k, int) or blk_k < 32 or blk_k % 32 or blk_k > spec.hidden:
            raise ChainError("schedule.blk_k", f"must be \"auto\" or a multiple of 32 between 32 and hidden = {spec.hidden}, got {blk_k}")
        threads = threads_hint or max(32, min(256, blk_k // vector))
    while vector > 1 and blk_k % (threads * vector):
        vector //= 2
    if blk_k % threads:
        raise ChainError("schedule.blk_k", f"must be a multiple of threads = {threads}, got {blk_k}")
    per_thread = block_m * blk_k // threads
    if per_thread > HARD_ELEMS_PER_THREAD:
        raise ChainError("schedule.blk_k", f"blk_k {blk_k} × block_m {block_m} over {threads} threads exceeds {HARD_ELEMS_PER_THREAD} elements per thread")
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


def _with_prefetch(spec: KernelSpec, schedule: Schedule, side_inputs: tuple[Tensor, ...]) -> Schedule:
    hint = spec.schedule.prefetch
    if not schedule.builds_row:
        if hint is True:
            raise ChainError("schedule.prefetch", f"applies to the \"fragment\" and \"stream\" variants only; this kernel is \"{schedule.variant}\"")
        return schedule
    prefetch = DEFAULT_PREFETCH if hint == "auto" else hint
    if not prefetch or not side_inputs:
        return schedule
    per_column = sum(1 for t in side_inputs if t.per_column)
    staged_per_thread = per_column * schedule.padded_hidden // schedule.threads
    how = (
        "per-column ones into registers in the row's layout once per block, per-token ones through the ring with the row"
        if schedule.variant == "stream"
        else "per-column ones into registers in the row's layout, per-token ones into shared memory, so their latency overlaps the row load"
    )
    return replace(
        schedule,
        prefetch=True,
        register_estimate=schedule.register_estimate + staged_per_thread,
        reasons=schedule.reasons + (f"side inputs are loaded next to the row, before the first reduction: {how}",),
    )


# Per SM: the register file (32-bit registers), the most resident threads, shared memory for blocks.
SM_REGISTERS = 65536
SM_THREADS = 2048
SM_SHARED_BYTES = 227 * 1024
MAX_BLOCKS_PER_SM = 16
# A row's fp32 values plus indexing: fewer registers per thread than this must spill.
REGISTERS_BESIDE_ROW = 32
RING_SLOT_CHOICES = (2, 3, 4)
# One row in flight while one is reduced; measured against deeper rings by `fusegen tune`.
DEFAULT_RING_SLOTS = 2


def _stream_ring_bytes(spec: KernelSpec, schedule: Schedule, side_inputs: tuple[Tensor, ...], slots: int) -> int:
    """Shared memory of the stream ring: `slots` padded rows (the row is read back in its padded
    layout, so a slot spans the padding too), and of every per-token side input when prefetched."""
    per_token = sum(t.shape[1].size * 4 for t in side_inputs if t.per_token_row) if schedule.prefetch else 0
    return slots * (schedule.padded_hidden * DTYPE_BYTES[spec.dtype] + per_token)


def _check_ring_copy_width(spec: KernelSpec, schedule: Schedule) -> None:
    """The ring is filled by one cp.async copy of the unpadded row, which TileLang partitions over the
    threads itself. Only an even split into whole vectors is reliably vectorized: 7168 columns over 512
    threads (14 each) gave 4-byte copies, over 1024 (7 each) no cp.async at all; rows that do not divide
    by threads × vector went either way with no rule we could find (fp32 40 and fp16 1000 columns
    kept their vectors; fp32 16, 24 and 80 fell to 4-byte copies; fp16 16, 520 over 64 threads and 2056
    over 256 did not compile: "no eligible global->shared store"). So the row must split into whole
    vectors per thread, and thread counts that do not are refused, naming those that fit."""
    vector = schedule.vector_elems
    if spec.hidden % (schedule.threads * vector) == 0:
        return
    fitting = [t for t in THREAD_CHOICES if spec.hidden % (t * vector) == 0]
    key = "schedule.threads" if spec.schedule.threads != "auto" else "schedule.variant"
    raise ChainError(
        key,
        f"\"stream\" fills its ring with a cp.async copy of the row that must split evenly into whole "
        f"{vector * DTYPE_BYTES[spec.dtype]}-byte vectors per thread (otherwise TileLang narrows the copies or cannot "
        f"emit them): {spec.hidden} columns do not split over {schedule.threads} threads × {vector} columns; thread counts "
        f"that do: {', '.join(map(str, fitting)) or 'none (use variant fragment)'}",
    )


# The SMs of the full GH100 die, more than any Hopper part enables: a stream program sizes its grid from
# the GPU it compiles on, so its token bound must hold for the largest grid it can get.
MAX_HOPPER_SMS = 144


def stream_token_limit(blocks_per_sm: int, slots: int) -> int:
    """The most tokens a stream program can count: TileLang does its token index math in int32 (addresses
    are int64), and the largest index it forms is the copy issued slots − 1 grids ahead of the last token,
    which also covers the loop bound's ceildiv(tokens − block, grid) (tokens + grid − 1). A pinned count
    past this fails to compile (the constant overflows); a dynamic one would wrap."""
    return MAX_TOKENS + 1 - (slots - 1) * blocks_per_sm * MAX_HOPPER_SMS


def _with_stream(spec: KernelSpec, schedule: Schedule, side_inputs: tuple[Tensor, ...]) -> Schedule:
    """Sizes the persistent grid of a stream schedule: blocks per SM within the SM's shared memory,
    threads and registers (the launch bound holds every thread to SM_REGISTERS / resident threads)."""
    if schedule.variant != "stream":
        return schedule
    row_bytes = spec.hidden * DTYPE_BYTES[spec.dtype]
    if row_bytes % 4:
        raise ChainError(
            "schedule.variant",
            f"\"stream\" copies rows with cp.async, whose narrowest access is 4 bytes: a row of {spec.hidden} × "
            f"{DTYPE_BYTES[spec.dtype]} bytes leaves every other row misaligned; it needs an even hidden",
        )
    _check_ring_copy_width(spec, schedule)
    slots = _checked_hint(spec.schedule.ring_slots, "schedule.ring_slots", RING_SLOT_CHOICES) or DEFAULT_RING_SLOTS
    ring = _stream_ring_bytes(spec, schedule, side_inputs, slots)
    if ring > SHARED_BYTES_LIMIT:
        key = "schedule.ring_slots" if spec.schedule.ring_slots != "auto" else "schedule.variant"
        raise ChainError(
            key,
            f"\"stream\" keeps {slots} rows (and their per-token side inputs) in shared memory: {ring} bytes exceeds {SHARED_BYTES_LIMIT}",
        )

    def registers_each(blocks: int) -> int:
        return SM_REGISTERS // (blocks * schedule.threads)

    fits = [
        b for b in range(1, MAX_BLOCKS_PER_SM + 1)
        if b * ring <= SM_SHARED_BYTES and b * schedule.threads <= SM_THREADS
        and registers_each(b) >= schedule.elems_per_thread + REGISTERS_BESIDE_ROW
    ]
    if not fits:
        raise ChainError("schedule.variant", f"\"stream\" cannot keep even one block of {schedule.threads} threads on an SM")
    described = (
        f"one of {', '.join(map(str, fits))} for this row ({schedule.threads} threads holding {schedule.elems_per_thread} "
        f"values each, a {ring}-byte ring)"
    )
    hint = _checked_hint(spec.schedule.blocks_per_sm, "schedule.blocks_per_sm", tuple(fits), described)
    if hint:
        blocks, why = hint, "as the blocks_per_sm hint asks"
    else:
        comfortable = [b for b in fits if registers_each(b) >= schedule.register_estimate] or fits[:1]
        blocks, why = comfortable[-1], f"the most that leave each thread the ~{schedule.register_estimate} registers it is estimated to need"
    limit = stream_token_limit(blocks, slots)
    if spec.tokens is not None and spec.tokens > limit:
        raise ChainError(
            "tokens",
            f"{spec.tokens} is more than \"stream\" at {blocks} blocks per SM and a {slots}-slot ring can count: its int32 "
            f"token index reaches the last token plus {slots - 1} grid(s) of up to {blocks * MAX_HOPPER_SMS} blocks; allowed 1 … {limit}",
        )
    reason = (
        f"persistent grid of {blocks} blocks per SM × the SMs of the GPU it compiles on ({why}; {blocks * HOPPER_SMS} "
        f"blocks on an H100 SXM or H200); each block takes every grid-th row through a {slots}-slot {ring}-byte "
        f"shared-memory ring, the next {slots - 1} row(s)' cp.async in flight while the current one is reduced"
    )
    return replace(
        schedule, blocks_per_sm=blocks, ring_slots=slots, reasons=schedule.reasons + (reason,)
    )


def choose_schedule(spec: KernelSpec) -> Schedule:
    """Variant, threads, block_m and vector width; prefetch is decided once the stages are known."""
    hints = spec.schedule
    threads = _checked_hint(hints.threads, "schedule.threads", THREAD_CHOICES, "a multiple of 32 from 32 to 1024")
    block_m = _checked_hint(hints.block_m, "schedule.block_m", tuple(b for b in range(1, MAX_BLOCK_M + 1) if _power_of_two(b))) or 1
    if hints.blk_k != "auto" and hints.variant not in ("splitk", "auto"):
        raise ChainError("schedule.blk_k", f"only applies to variant = \"splitk\", not \"{hints.variant}\"")
    for key in ("blocks_per_sm", "ring_slots"):
        if getattr(hints, key) != "auto" and hints.variant != "stream":
            raise ChainError(f"schedule.{key}", f"only applies to variant = \"stream\", not \"{hints.variant}\"")
    if hints.variant == "stream" and block_m != 1:
        raise ChainError("schedule.block_m", f"variant \"stream\" takes one row per step: block_m must be \"auto\" or 1, got {block_m}")
    multiple = math.lcm(*(REGISTRY[op.kind].columns_multiple_of(op) for op in spec.op))
    variant = hints.variant
    if hints.blk_k != "auto" and variant == "auto":
        variant = "splitk"
    if variant in ("naive", "splitk"):
        supported = len(spec.op) == 1 and variant in REGISTRY[spec.op[0].kind].whole_kernel_variants
        if not supported:
            able = sorted(op.kind for op in REGISTRY.values() if variant in op.whole_kernel_variants)
            raise ChainError(
                "schedule.variant",
                f"\"{variant}\" is a whole-kernel variant for a chain of one {' or '.join(able)} op; this chain "
                f"({' → '.join(op.kind for op in spec.op)}) needs \"fragment\" or \"auto\"",
            )
        if variant == "splitk":
            return _splitk_schedule(spec, block_m, threads, hints.blk_k)
    try:
        schedule = _row_schedule(spec, block_m, threads, multiple)
    except ChainError:
        if variant == "auto" and len(spec.op) == 1 and "splitk" in REGISTRY[spec.op[0].kind].whole_kernel_variants:
            return _splitk_schedule(spec, block_m, threads, "auto")
        raise
    if variant == "naive":
        shared = block_m * schedule.padded_hidden * DTYPE_BYTES[spec.dtype]
        if shared > SHARED_BYTES_LIMIT:
            raise ChainError("schedule.variant", f"\"naive\" stages the row in shared memory: {shared} bytes exceeds {SHARED_BYTES_LIMIT}")
        return replace(schedule, variant="naive", reasons=schedule.reasons + ("the row is staged in shared memory and read from there twice (the textbook form)",))
    if variant == "auto":
        schedule = replace(schedule, reasons=schedule.reasons + ("variant auto → fragment: the whole row fits in registers, so x is read once",))
    if variant == "stream":
        schedule = replace(schedule, variant="stream")
    return schedule


def _ledger(spec: KernelSpec, stages, x: Tensor, y: Tensor | None) -> Ledger:
    act = spec.hidden * DTYPE_BYTES[spec.dtype]

    def lines_for(kernel: str, tensors, direction: str):
        return [LedgerLine(kernel, t.arg, direction, t.bytes_per_token(), t.fixed_bytes()) for t in tensors]

    fused = [LedgerLine("fused", "x", "read", act, 0)]
    unfused = []
    current = "x"
    for stage in stages:
        fused += lines_for("fused", stage.inputs, "read") + lines_for("fused", stage.outputs, "write")
        alone = f"{stage.kind} alone"
        unfused.append(LedgerLine(alone, current, "read", act, 0))
        unfused += lines_for(alone, stage.inputs, "read") + lines_for(alone, stage.outputs, "write")
        op = REGISTRY[stage.kind]
        if op.row_output in (t.arg for t in stage.outputs):
            current = op.row_output
        elif op.transforms_row:
            current = f"{stage.kind} output"
            unfused.append(LedgerLine(alone, current, "write", act, 0))
    if y is not None:
        fused.append(LedgerLine("fused", "y", "write", act, 0))
    return Ledger(tuple(fused), tuple(unfused))


def staged_inputs(stages: tuple[Stage, ...]) -> tuple[Tensor, ...]:
    """The side inputs a prefetching prologue (or the stream ring) loads next to the row: every stage's
    inputs but those its op's fragment reads itself (ops.Op.staged_inputs)."""
    return tuple(t for s in stages if REGISTRY[s.kind].staged_inputs for t in s.inputs)


def _route(spec: KernelSpec, first_tokens: int, last_tokens: int | None, origin: str, tuned: bool = False) -> Route:
    schedule = choose_schedule(spec)
    if tuned:
        measured = "the fastest of the schedules `fusegen tune` measured for these token counts (its hints fill the ones the spec leaves auto)"
        schedule = replace(schedule, reasons=(measured,) + schedule.reasons)
    context = chain_context(spec, schedule.layout(spec.hidden))
    stages = tuple(REGISTRY[op.kind].plan(op, index, context) for index, op in enumerate(spec.op))
    side_inputs = staged_inputs(stages)
    schedule = _with_stream(spec, _with_prefetch(spec, schedule, side_inputs), side_inputs)
    layout = schedule.layout(spec.hidden)
    scratch = ()
    if schedule.variant == "stream":
        # The wait for the current row's cp.async is followed by a barrier: the copies of one thread are
        # read by others.
        scratch = (Scratch("x_ring", "shared", (schedule.ring_slots, layout.padded_hidden), spec.dtype, "this row and the next ones, their cp.async in flight", barrier=True),)
    if schedule.builds_row:
        scratch += (Scratch("row", "fragment", (schedule.block_m, layout.padded_hidden), "float32", "the chain's running value, fp32, one row per block row"),)
    staged_rows = schedule.ring_slots if schedule.variant == "stream" else schedule.block_m
    if schedule.prefetch:
        scratch += tuple(
            Scratch(f"{t.param.lower()}_staged", "shared", (staged_rows, t.shape[1].size), "float32",
                    f"{t.arg} of the block's rows, loaded with the row (read after the row's first barrier)")
            if t.per_token_row
            # An offset weight (1 + w) stays float32: rounded back to a 2-byte dtype it would lose w's low bits.
            else Scratch(f"{t.param.lower()}_staged", "fragment", (layout.padded_hidden,), "float32" if t.offset else t.dtype,
                         f"{t.arg}{f' + {t.offset!r}' if t.offset else ''} in the row's thread layout, loaded with the row")
            for t in side_inputs
            if t.per_token_row or t.per_column
        )
    scratch = tuple(replace(b, owner="kernel") for b in scratch)
    if not schedule.builds_row:
        (stage,) = stages
        scratch += tuple(replace(b, owner=_owner(stage)) for b in REGISTRY[stage.kind].variant_scratch(schedule.variant, stage, layout, spec.dtype))
    scratch += tuple(replace(b, owner=_owner(s)) for s in stages for b in s.scratch)
    schedule = _with_joint_reduction(spec, schedule, stages)
    scratch += _reduction_buffers(schedule, stages, layout)
    if schedule.variant == "fragment" and _staged_rows_read_before_exchange(schedule, stages):
        first = next(k for k, b in enumerate(scratch) if b.scope == "shared" and b.name.endswith("_staged"))
        why = scratch[first].why.replace("(read after the row's first barrier)", "(read before any exchange: one barrier for the staged rows)")
        scratch = scratch[:first] + (replace(scratch[first], why=why, barrier=True),) + scratch[first + 1 :]
    return Route(first_tokens, last_tokens, schedule, stages, scratch, origin)


def _staged_rows_read_before_exchange(schedule: Schedule, stages: tuple[Stage, ...]) -> bool:
    """Whether per-token side inputs staged in shared memory are read before the row's first exchange,
    whose barrier would otherwise order them too."""
    if not schedule.prefetch:
        return False
    readers = [k for k, s in enumerate(stages) if any(t.shape[0].tokens for t in staged_inputs((s,)))]
    crossing = [k for k, s in enumerate(stages) if any(r.partials for r in s.reductions)]
    if schedule.joint_reduction:
        span = joint_span(stages)
        crossing = [k for k in crossing if k not in span] + [span[1]]
    return bool(readers) and (not crossing or min(readers) < min(crossing))


def _owner(stage: Stage) -> str:
    return f"op[{stage.index}] {stage.kind}"


def _reduction_buffers(schedule: Schedule, stages: tuple[Stage, ...], layout: Layout) -> tuple[Scratch, ...]:
    """The buffers of the row reductions that cross warps: each thread's partials, folded across its warp
    by shuffles, then one shared exchange (one barrier) per reduction, or one for the two reductions
    of a joint span."""
    bm, threads = layout.block_m, layout.threads
    chunks = layout.padded_hidden // (layout.vector * threads)
    warps = max(1, threads // 32)
    buffers = []
    exchanges = []
    for stage in stages:
        for r in stage.reductions:
            if r.partials is None:
                continue
            lanes, thread = partial_buffers(r.partials)
            buffers += [
                Scratch(lanes, "fragment", (bm, chunks, threads), "float32", f"{r.name}: each thread's partial per vector chunk", _owner(stage)),
                Scratch(thread, "fragment", (bm, threads), "float32", f"{r.name}: each thread's partial, then its warp's (by shuffles)", _owner(stage)),
            ]
            exchanges.append((stage, r))
    if schedule.joint_reduction:
        opening, closing = joint_span(stages)
        joint = [(s, r) for s, r in exchanges if s.index in (stages[opening].index, stages[closing].index)]
        exchanges = [e for e in exchanges if e not in joint]
        names = tuple(r.partials for _, r in joint)
        why = " and ".join(r.name for _, r in joint) + ": the warps' partials of both, one barrier per row for the two"
        buffers.append(Scratch(exchange_buffer(names), "shared", (bm, len(names), warps), "float32", why, "kernel", barrier=True))
    for stage, r in exchanges:
        why = f"{r.name}: the warps' partials, combined by every thread after one barrier per row"
        buffers.append(Scratch(exchange_buffer((r.partials,)), "shared", (bm, 1, warps), "float32", why, _owner(stage), barrier=True))
    return tuple(buffers)


# Measured (NOTES.md steps 13 and 15): one barrier less per row, but on one-row-per-block schedules the
# effect at 16384 tokens has no sign that holds across shapes — with RoPE by shuffle the planner's fp8
# schedule runs 1.3× faster with it at 4096 and 1.25× slower at 7168 — so it stays off there and tuning
# turns it on per bucket; in the stream variant it was 1.07–1.14× faster throughout.
DEFAULT_JOINT_REDUCTION = {"fragment": False, "stream": True}


def _with_joint_reduction(spec: KernelSpec, schedule: Schedule, stages: tuple[Stage, ...]) -> Schedule:
    hint = spec.schedule.joint_reduction
    possible = schedule.builds_row and joint_span(stages) is not None
    if hint is True and not possible:
        raise ChainError(
            "schedule.joint_reduction",
            f"applies to a fragment- or stream-variant chain that ends {joint_chain()}, with only the bracketed ops between",
        )
    if not possible or not (DEFAULT_JOINT_REDUCTION[schedule.variant] if hint == "auto" else hint):
        return schedule
    reason = (
        "the norm's sum of squares and the per-token amax cross the warps in one exchange (one barrier per row, not two): "
        "the norm hands on x·w, RoPE is linear, the amax is taken before rstd is applied and scaled by it after; exact, "
        "as rounding is monotonic"
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


def _tuned_spec(spec: KernelSpec, tuned: TunedRoute) -> KernelSpec:
    """The spec with a tuning winner filling the schedule hints it left "auto" (pinned hints win)."""
    pinned = {key: value for key, value in spec.schedule.model_dump().items() if value != "auto"}
    hints = ScheduleHints.model_validate({**tuned.hints, **pinned})
    return spec.model_copy(update={"schedule": hints})


def _tuned_route(spec: KernelSpec, tuned: TunedRoute) -> Route:
    try:
        return _route(_tuned_spec(spec, tuned), tuned.first_tokens, tuned.last_tokens, tuned.origin, tuned=True)
    except ChainError as exc:
        raise ChainError(exc.key, f"{exc.message} — a hint from the tuning winners ({tuned.origin}); rerun `fusegen tune`") from None


def plan(spec: KernelSpec, spec_file: str, tuned: tuple[TunedRoute, ...] = ()) -> Plan:
    """`tuned`: measured winners by token range (tuning.py); without them one route serves every count."""
    if spec.tokens is not None:
        tuned = tuple(TunedRoute(1, None, r.hints, r.origin) for r in tuned if r.serves(spec.tokens))
    if tuned:
        routes = tuple(_tuned_route(spec, r) for r in tuned)
    else:
        routes = (_route(spec, 1, None, "planner rules (no tuning entry for this kernel)"),)
    stages = routes[-1].stages
    row_dims = (Dim(tokens=True), Dim(size=spec.hidden))
    x = Tensor("X", "x", spec.dtype, row_dims, "input", "activations, one row per token")
    y = Tensor("Y", "y", spec.dtype, row_dims, "output", "the chain's row after its last transforming op") if spec.writes_y else None
    return Plan(
        name=spec.name,
        identity=f"{spec.name}-{content_hash(spec, tuned)}",
        spec_file=spec_file,
        fusegen_version=__version__,
        dtype=spec.dtype,
        hidden=spec.hidden,
        tokens=spec.tokens,
        routes=routes,
        inputs=(x,) + tuple(t for s in stages for t in s.inputs),
        outputs=((y,) if y else ()) + tuple(t for s in stages for t in s.outputs),
        ledger=_ledger(spec, stages, x, y),
        ledger_tokens=spec.tokens or LEDGER_TOKENS,
        writes_y=spec.writes_y,
        y_before=_y_position(stages) if spec.writes_y else None,
        spec=spec.model_dump(mode="json"),
    )


def _y_position(stages: tuple[Stage, ...]) -> int:
    """Y is the row once final: before the first stage that does not transform it (all later ones only
    read it), or after the last."""
    return next((k for k, stage in enumerate(stages) if not REGISTRY[stage.kind].transforms_row), len(stages))


def plan_as_dict(p: Plan) -> dict:
    """The plan as JSON-ready data, with the ledger evaluated at `ledger_tokens`."""
    data = asdict(p)
    m = p.ledger_tokens
    fused, unfused = p.ledger.fused_bytes(m), p.ledger.unfused_bytes(m)
    data["ledger"]["at_tokens"] = {
        "tokens": m,
        "fused_bytes": fused,
        "unfused_bytes": unfused,
        "fused_MB": round(fused / 1e6, 1),
        "unfused_MB": round(unfused / 1e6, 1),
        "saving": round(unfused / fused, 2),
    }
    return data
