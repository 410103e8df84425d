"""The planner: spec in, plain data out — stages, every buffer and barrier a row costs, reductions, the
schedule and why, routes per token range, the ledger, the identity. No text here."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, replace

from . import __version__
from .errors import ChainError
from .model import (
    DTYPE_BYTES,
    Dim,
    Extent,
    FragmentOverStream,
    Layout,
    Ledger,
    LedgerLine,
    Plan,
    Reduction,
    Route,
    RowWaits,
    Schedule,
    Scratch,
    Stage,
    Tensor,
    exchange_buffer,
    partial_buffers,
    rendered,
    staged_buffer,
    writes_activation_row,
)
from .ops import REGISTRY
from .schedule import (
    FEW_TOKENS,
    FINE_SPLIT_TOKENS,
    STREAM_MIN_TOKENS,
    THREADS_HINT_REASON,
    WAVE_TOKENS,
    WIDE_STREAM_MAX_FRAGMENT_BLOCKS,
    choose_schedule,
    few_token_split,
    few_token_threads,
    filled_sm,
    fp8_row_full_sm,
    gathering_row,
    joint_span,
    resident_blocks,
    sector_rows,
    short_rows,
    wave_threads,
    wide_reread,
    wide_stream,
    wide_streamed,
    with_held_tiles,
    with_joint_reduction,
    with_pinned_side_inputs,
    with_prefetch,
    with_variant,
)
from .spec import KernelSpec, ScheduleHints, chain_context
from .tuning import NearbyRoute, TunedRoute

# The seed's shape: the ledger in plan.json is evaluated at this many tokens unless the spec pins them.
LEDGER_TOKENS = 4096


def content_hash(spec: KernelSpec, tuned: tuple[TunedRoute, ...] = ()) -> str:
    canonical = json.dumps(
        {"spec": spec.model_dump(mode="json"), "tuned": [asdict(r) for r in tuned], "fusegen": __version__}, sort_keys=True
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


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


def unstaged_rows(stages: tuple[Stage, ...]) -> int:
    """How many per-token rows a row's ops load themselves, in the row's own layout, so that no prefetch or
    stream ring carries them (add_residual's residual: ops.Op.staged_inputs)."""
    return sum(1 for s in stages if not REGISTRY[s.kind].staged_inputs for t in s.inputs if t.per_token_row)


def reductions_after_gather(stages: tuple[Stage, ...]) -> tuple[Reduction, ...]:
    """The reductions (an FP8 amax) that follow the first stage reading a side input at a row another
    input names."""
    gathering = [k for k, s in enumerate(stages) if any(t.index is not None for t in s.inputs)]
    return tuple(r for s in stages[gathering[0] + 1 :] for r in s.reductions) if gathering else ()


def gathered_inputs(stages: tuple[Stage, ...]) -> int:
    """How many side inputs a row reads at a row another input names (RoPE's cache at the positions)."""
    return sum(1 for s in stages for t in s.inputs if t.index is not None)


def _route(
    spec: KernelSpec,
    first_tokens: int,
    last_tokens: int | None,
    origin: str,
    tuned: bool = False,
    few_tokens: int = 0,
    stream: bool = True,
    wave: bool = False,
) -> Route:
    """`few_tokens`, `wave`, `stream`: see choose_schedule and with_variant. On a route of many tokens
    (`stream`) schedule.short_rows may put several short rows in a block, or else schedule.wide_stream
    take a stream program over the planned fragment one, from what the fragment route's rows wait on and
    write; a fragment route whose stores of consecutive rows share sectors then takes more rows a block
    (schedule.sector_rows)."""
    route = _route_by_waits(spec, first_tokens, last_tokens, origin, tuned, few_tokens, stream, wave)
    sectors = None if few_tokens or not stream or route.schedule.variant != "fragment" else sector_rows(spec, route.schedule)
    return route if sectors is None else _planned_route(spec, sectors, first_tokens, last_tokens, origin, stream)


def _route_by_waits(
    spec: KernelSpec, first_tokens: int, last_tokens: int | None, origin: str, tuned: bool, few_tokens: int, stream: bool, wave: bool
) -> Route:
    schedule = choose_schedule(spec, few_tokens, wave)
    if tuned:
        measured = (
            "the fastest of the schedules `fusegen tune` measured for these token counts (its hints fill the ones the spec leaves auto)"
        )
        schedule = replace(schedule, reasons=(measured,) + schedule.reasons)
    route = _planned_route(spec, schedule, first_tokens, last_tokens, origin, stream)
    if not stream:
        return route
    outputs = [t for s in route.stages for t in s.outputs]
    waits = RowWaits(
        barriers=route.barriers_per_row,
        gathers=gathered_inputs(route.stages),
        after_gather=reductions_after_gather(route.stages),
        writes_row=writes_activation_row(spec.dtype, spec.hidden, spec.writes_y, outputs),
        unstaged_rows=unstaged_rows(route.stages),
    )
    several = None if few_tokens else short_rows(spec, schedule, waits, route.schedule.variant == "stream")
    if several is not None:
        return _planned_route(spec, several, first_tokens, last_tokens, origin, stream)
    side_inputs = staged_inputs(route.stages)
    gathering = None if few_tokens else gathering_row(spec, schedule, side_inputs, waits)
    if gathering is not None:
        return _planned_route(spec, gathering, first_tokens, last_tokens, origin, stream)
    streamed = wide_stream(spec, route.schedule, side_inputs, waits)
    streamed_route = None if streamed is None else _planned_route(spec, streamed, first_tokens, last_tokens, origin, stream)
    streamed_schedule = streamed_route.schedule if streamed_route else None
    reread = None if few_tokens else wide_reread(spec, route.schedule, side_inputs, streamed_schedule, waits.writes_row)
    if reread is not None:
        return _planned_route(spec, reread, first_tokens, last_tokens, origin, stream)
    if streamed_route is not None:
        return streamed_route
    if few_tokens or tuned:
        return route
    filled = filled_sm(spec, route.schedule, side_inputs)
    bound = filled or fp8_row_full_sm(spec, route.schedule, side_inputs, waits)
    if bound is None:
        return route
    blocks, why = bound
    bounded = replace(schedule, blocks_per_sm=blocks, reasons=schedule.reasons + (why,))
    # fp8_row_full_sm's bound holds the row only with its side inputs read where used
    return _planned_route(spec, bounded, first_tokens, last_tokens, origin, stream, staged=filled is not None)


def _planned_route(
    spec: KernelSpec, schedule: Schedule, first_tokens: int, last_tokens: int | None, origin: str, stream: bool, staged: bool = True
) -> Route:
    """The route of `schedule` as choose_schedule (or schedule.wide_stream) left it: stages planned on its
    layout, side inputs staged (unless a rule that bounded it read them where used: `staged` False), variant
    resolved, scratch allocated."""
    context = chain_context(spec, schedule.layout(spec.hidden))
    stages = tuple(REGISTRY[op.kind].plan(op, index, context) for index, op in enumerate(spec.op))
    side_inputs = staged_inputs(stages)
    if staged:
        schedule = with_prefetch(spec, schedule, side_inputs, reductions_after_gather(stages))
    schedule = with_variant(spec, schedule, side_inputs, stream)
    schedule = with_held_tiles(with_pinned_side_inputs(schedule, side_inputs), side_inputs)
    layout = schedule.layout(spec.hidden)
    scratch = ()
    if schedule.ring_in_registers:
        scratch = (
            Scratch(
                "x_next",
                "fragment",
                layout.rows(layout.padded_hidden),
                spec.dtype,
                "the next row's x, loaded while this row is reduced: each thread holds what it reads back",
            ),
        )
    elif schedule.variant == "stream":
        # The wait for the current row's cp.async is followed by a barrier: the copies of one thread are
        # read by others.
        scratch = (
            Scratch(
                "x_ring",
                "shared",
                (schedule.ring_slots, layout.padded_hidden),
                spec.dtype,
                "this row and the next ones, their cp.async in flight",
                barrier=True,
            ),
        )
    if schedule.builds_row:
        scratch += (
            Scratch(
                "row",
                "fragment",
                layout.rows(layout.padded_hidden),
                "float32",
                "the chain's running value, fp32, one row per block row",
            ),
        )
    if schedule.prefetch:
        staged = staged_buffers(schedule, side_inputs, layout)
        if schedule.ring_in_registers:
            # No x ring: the wait for this row's copies into the side inputs' own ring takes its barrier.
            staged = _first_staged_row_waits(staged, lambda why: why + ", read after one barrier for all of them")
        scratch += staged
    scratch = tuple(replace(b, owner="kernel") for b in scratch)
    if not schedule.builds_row:
        (stage,) = stages
        scratch += tuple(
            replace(b, owner=_owner(stage)) for b in REGISTRY[stage.kind].variant_scratch(schedule.variant, stage, layout, spec.dtype)
        )
    scratch += tuple(replace(b, owner=_owner(s)) for s in stages for b in s.scratch)
    schedule = with_joint_reduction(spec, schedule, stages)
    scratch += reduction_buffers(schedule, stages, layout)
    if schedule.variant == "fragment" and _staged_rows_read_before_exchange(schedule, stages, layout):
        scratch = _first_staged_row_waits(
            scratch,
            lambda why: why.replace("(read after the row's first barrier)", "(read before any exchange: one barrier for the staged rows)"),
        )
    return Route(first_tokens, last_tokens, schedule, stages, scratch, origin)


def _first_staged_row_waits(scratch: tuple[Scratch, ...], reworded) -> tuple[Scratch, ...]:
    """`scratch` with its first per-token row staged in shared memory marked as taking the barrier at which every
    staged row's readers wait, its reason `reworded` (a function of the old one) to say so."""
    first = next((k for k, b in enumerate(scratch) if b.scope == "shared" and b.name.endswith("_staged")), None)
    if first is None:
        return scratch
    return scratch[:first] + (replace(scratch[first], why=reworded(scratch[first].why), barrier=True),) + scratch[first + 1 :]


def staged_buffers(schedule: Schedule, side_inputs: tuple[Tensor, ...], layout: Layout) -> tuple[Scratch, ...]:
    """The buffers a prefetching prologue (or the stream ring) stages the side inputs in: per-token rows in
    shared memory, per-column inputs in registers in the row's layout."""

    def per_token(t: Tensor) -> Scratch:
        width = t.shape[1].size
        why = f"{t.arg} of the block's rows, loaded with the row (read after the row's first barrier)"
        if schedule.variant == "stream":
            if schedule.ring_in_registers:
                why = f"{t.arg} of this row and the next, their cp.async in flight"
            return Scratch(staged_buffer(t.param), "shared", (schedule.ring_slots, width), "float32", why)
        passes = whole_thread_extent(width, layout)
        if passes != width:
            why = why.replace("loaded with the row", "loaded with the row on every thread, padded to whole passes")
        return Scratch(staged_buffer(t.param), "shared", layout.rows(passes), "float32", why)

    return tuple(
        per_token(t)
        if t.per_token_row
        # An offset weight (1 + w) stays float32: rounded back to a 2-byte dtype it would lose w's low bits.
        else Scratch(
            staged_buffer(t.param),
            "fragment",
            (layout.padded_hidden,),
            "float32" if t.offset else t.dtype,
            f"{t.arg}{f' + {t.offset!r}' if t.offset else ''} in the row's thread layout, loaded with the row",
        )
        for t in side_inputs
        if t.per_token_row or t.per_column
    )


def whole_thread_extent(width: int, layout: Layout) -> int:
    """A staged per-token row's width padded to whole passes of a row's threads. A loop over fewer
    entries than threads runs under `if (threadIdx.x < width)`, and ptxas issues no load inside that
    branch before the x-consuming arithmetic it schedules ahead of it: the gather's DRAM latency (and for a
    cached RoPE the positions' too) then starts only after the row has arrived. Over whole passes every
    thread loads (the padding repeats the row's last entry, from the same sectors: no bytes move)."""
    threads = layout.row_threads
    if width % threads == 0:
        return width
    return Extent(
        -(-width // threads) * threads, f"({rendered(width)} + {rendered(threads)} - 1) // {rendered(threads)} * {rendered(threads)}"
    )


def _staged_rows_read_before_exchange(schedule: Schedule, stages: tuple[Stage, ...], layout: Layout) -> bool:
    """Whether per-token side inputs staged in shared memory are read before the row's first exchange,
    whose barrier would otherwise order them too. Where a row reduces within its lanes they end in shuffles,
    and the first barrier is a stage's own shared round trip (a RoPE span), taken before that stage reads."""
    if not schedule.prefetch:
        return False
    readers = [k for k, s in enumerate(stages) if any(t.shape[0].tokens for t in staged_inputs((s,)))]
    if layout.reduces_within_lanes:
        round_trips = [k for k, s in enumerate(stages) if any(b.barrier for b in s.scratch)]
        return bool(readers) and (not round_trips or min(readers) < min(round_trips))
    # A reduction across warps, or values meeting in shared memory otherwise: a barrier either way.
    crossing = [k for k, s in enumerate(stages) if any(r.partials for r in s.reductions) or REGISTRY[s.kind].meets_in_shared_memory(s)]
    if schedule.joint_reduction:
        span = joint_span(stages)
        crossing = [k for k in crossing if k not in span] + [span[1]]
    return bool(readers) and (not crossing or min(readers) < min(crossing))


def _owner(stage: Stage) -> str:
    return f"op[{stage.index}] {stage.kind}"


def reduction_buffers(schedule: Schedule, stages: tuple[Stage, ...], layout: Layout) -> tuple[Scratch, ...]:
    """The buffers of the row reductions that cross threads: each thread's partials, folded across its warp
    by shuffles, then one shared exchange (one barrier) per reduction, or one for the two reductions
    of a joint span. Where a row reduces within its lanes (Layout.reduces_within_lanes) no exchange."""
    threads, chunks = layout.row_threads, layout.chunks
    buffers = []
    exchanges = []
    for stage in stages:
        for r in stage.reductions:
            if r.partials is None:
                continue
            lanes, thread = partial_buffers(r.partials)
            buffers += [
                Scratch(
                    lanes,
                    "fragment",
                    layout.rows(chunks, threads),
                    "float32",
                    f"{r.name}: each thread's partial per vector chunk",
                    _owner(stage),
                ),
                Scratch(
                    thread,
                    "fragment",
                    layout.rows(threads),
                    "float32",
                    f"{r.name}: each thread's partial, then its "
                    + ("row's" if layout.reduces_within_lanes else "warp's")
                    + " (by shuffles)",
                    _owner(stage),
                ),
            ]
            exchanges.append((stage, r))
    if layout.reduces_within_lanes:
        return tuple(buffers)
    warps = layout.warps
    if schedule.joint_reduction:
        opening, closing = joint_span(stages)
        joint = [(s, r) for s, r in exchanges if s.index in (stages[opening].index, stages[closing].index)]
        exchanges = [e for e in exchanges if e not in joint]
        names = tuple(r.partials for _, r in joint)
        why = " and ".join(r.name for _, r in joint) + ": the warps' partials of both, one barrier per row for the two"
        buffers.append(Scratch(exchange_buffer(names), "shared", layout.rows(len(names), warps), "float32", why, "kernel", barrier=True))
    for stage, r in exchanges:
        why = f"{r.name}: the warps' partials, combined by every thread after one barrier per row"
        buffers.append(
            Scratch(exchange_buffer((r.partials,)), "shared", layout.rows(1, warps), "float32", why, _owner(stage), barrier=True)
        )
    return tuple(buffers)


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


def _planner_routes(spec: KernelSpec) -> tuple[Route, ...]:
    """The planner's own routes by token count: up to FEW_TOKENS a row split over blocks where the chain
    allows one (few_token_split; finer up to FINE_SPLIT_TOKENS where no op normalises the row), or two warps a row
    where one would hold it (few_token_threads); then up to
    WAVE_TOKENS four warps a row or more where fewer would hold it (wave_threads); one row
    per block below STREAM_MIN_TOKENS where many tokens stream or take several short rows a block; and the
    schedule for many tokens above — one route where none of these differ, or for the count a spec pins."""
    origin = PLANNER_ORIGIN
    many = _route(spec, 1, None, origin)
    # (the last count a route serves, its _route options), ascending; the last one serves every count above.
    ranges: list[tuple[int | None, dict]] = []
    if few_token_split(spec, FINE_SPLIT_TOKENS) != few_token_split(spec):
        ranges.append((FINE_SPLIT_TOKENS, {"few_tokens": FINE_SPLIT_TOKENS}))
    if few_token_split(spec) > 1 or few_token_threads(spec, many.schedule):
        ranges.append((FEW_TOKENS, {"few_tokens": FEW_TOKENS}))
    wave = _route(spec, 1, WAVE_TOKENS, origin, wave=True, stream=False) if wave_threads(spec) else None
    if wave is not None and wave.schedule.prefetch >= many.schedule.prefetch:
        # A row that gathers (a RoPE cache row at its position) is read where used on four warps or more, not
        # staged beside the row (schedule._gathered_where_used): the position's load, then the cache row's, is
        # then the row's time, and the wave route lost to the staged one (perf/probe99).
        ranges.append((WAVE_TOKENS, {"wave": True, "stream": False}))
    streams = spec.schedule.variant == "auto" and many.schedule.variant == "stream"
    if streams or (spec.schedule.block_m == "auto" and many.schedule.block_m > 1):
        ranges.append((STREAM_MIN_TOKENS - 1, {"stream": False}))
    if not ranges:
        return (many,)

    def routed(first: int, last: int | None, options: dict) -> Route:
        if options.get("wave"):  # planned once above, where its staging was weighed; only its range differs
            return replace(wave, first_tokens=first, last_tokens=last)
        return _route(spec, first, last, origin, **options)

    if spec.tokens is not None:
        options = next((options for last, options in ranges if spec.tokens <= last), None)
        return (many,) if options is None else (routed(1, None, options),)
    routes, first = [], 1
    for last, options in ranges:
        routes.append(routed(first, last, options))
        first = last + 1
    return (*routes, replace(many, first_tokens=first))


PLANNER_ORIGIN = "planner rules (no tuning entry for this kernel)"


@dataclass(frozen=True)
class CompiledBound:
    """A launch bound `fusegen build` found for the planner's route starting at `first_tokens` by compiling it
    (build.stage, schedule.ptxas_bound_trials): `blocks` per SM, met by ptxas without a spill at `registers`
    a thread, where under the planner's own bound it gave `planned_registers` and a stack frame of
    `planned_stack_bytes` (a spill)."""

    first_tokens: int
    blocks: int
    registers: int
    planned_registers: int
    planned_stack_bytes: int = 0


def _compiled_bound(route: Route, bounds: tuple[CompiledBound, ...]) -> Route:
    bound = next((b for b in bounds if b.first_tokens == route.first_tokens), None)
    if bound is None:
        return route
    s = route.schedule
    met = f"under a launch bound of {bound.blocks} it gave {bound.registers} without a spill (schedule.ptxas_bound_trials)"
    if bound.blocks < (s.blocks_per_sm or 1):
        why = (
            f"lowered to {bound.blocks} block(s) per SM by compiling it: under the planner's bound of {s.blocks_per_sm} ptxas spilled "
            f"{bound.planned_stack_bytes} bytes a thread at {bound.planned_registers} registers; {met}"
        )
    else:
        why = (
            f"raised to {bound.blocks} blocks per SM by compiling it: as planned, ptxas gave a thread {bound.planned_registers} "
            f"registers, which keep {max(s.blocks_per_sm or 1, resident_blocks(bound.planned_registers, s.threads))} block(s) an SM; {met}"
        )
    return replace(route, schedule=replace(s, blocks_per_sm=bound.blocks, reasons=s.reasons + (why,)))


def plan(
    spec: KernelSpec,
    spec_file: str,
    tuned: tuple[TunedRoute, ...] = (),
    bounds: tuple[CompiledBound, ...] = (),
    over_stream: FragmentOverStream | None = None,
) -> Plan:
    """`tuned`: measured winners by token range (tuning.py); without them one route serves every count.
    `bounds`: the launch bounds the build found by compiling the planner's routes (CompiledBound);
    `over_stream`: the build's fragment program in place of wide_stream's stream (FragmentOverStream). The
    kernel's identity does not change with either, as they follow from the spec and the compiler."""
    if spec.tokens is not None:
        tuned = tuple(replace(r, first_tokens=1, last_tokens=None) for r in tuned if r.serves(spec.tokens))
    routes = None
    if tuned:
        try:
            routes = tuple(_tuned_route(spec, r) for r in tuned)
        except ChainError:
            # Winners of another width are a hint, not a promise: where one does not fit this row the
            # planner's own rules serve every count (winners of this very shape that do not fit are an error).
            if not all(isinstance(r, NearbyRoute) for r in tuned):
                raise
            tuned = ()
    if routes is None:
        routes = tuple(
            _compiled_bound(route, bounds)
            for route in (_planner_routes(spec) if over_stream is None else _over_stream_routes(spec, over_stream))
        )
        if over_stream is not None:
            routes = routes[:-1] + (_kept_over_stream(routes[-1], over_stream),)
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
        fragment_over_stream=over_stream,
    )


def _fragment_hinted(spec: KernelSpec, **hints) -> KernelSpec:
    return spec.model_copy(update={"schedule": spec.schedule.model_copy(update={"variant": "fragment", **hints})})


def _over_stream_routes(spec: KernelSpec, over_stream: FragmentOverStream) -> tuple[Route, ...]:
    """Variant "fragment"'s routes, the route of many tokens on the stream's threads where `over_stream` names
    them (the routes of fewer tokens keep their own rules' threads)."""
    routes = _planner_routes(_fragment_hinted(spec))
    if over_stream.threads is None:
        return routes
    many = _route(_fragment_hinted(spec, threads=over_stream.threads), routes[-1].first_tokens, None, PLANNER_ORIGIN)
    layout, *rest = many.schedule.reasons
    why = f"the stream's {over_stream.threads} threads, on which the build weighs the fragment program too"
    return routes[:-1] + (replace(many, schedule=replace(many.schedule, reasons=(layout.replace(THREADS_HINT_REASON, why), *rest))),)


def _kept_over_stream(route: Route, over_stream: FragmentOverStream) -> Route:
    if over_stream.blocks is None:
        why = "variant auto → fragment in place of wide_stream's stream, for the build to compile and weigh"
    else:
        why = (
            f"variant auto → fragment, not wide_stream's stream, by compiling it: ptxas gave a thread {over_stream.registers} registers, "
            f"which keep {over_stream.blocks} blocks an SM, more than the {WIDE_STREAM_MAX_FRAGMENT_BLOCKS} the stream was measured "
            "against (schedule.fragment_over_stream_blocks)"
        )
    s = route.schedule
    return replace(route, schedule=replace(s, reasons=s.reasons + (why,)))


def over_stream_trials(p: Plan) -> tuple[Plan, ...]:
    """`p`'s kernel planned with wide_stream's stream declined on its route of many tokens, for the build to
    compile and weigh (FragmentOverStream): on variant "fragment"'s threads, and on the stream's where they differ
    and hold the row; none where that route is not such a stream or `p` is tuned."""
    spec = KernelSpec.model_validate(p.spec)
    if any(r.origin != PLANNER_ORIGIN for r in p.routes) or not wide_streamed(spec, p.schedule):
        return ()
    fragment = plan(spec, p.spec_file, over_stream=FragmentOverStream())
    if fragment.schedule.threads == p.schedule.threads:
        return (fragment,)
    try:
        return (fragment, plan(spec, p.spec_file, over_stream=FragmentOverStream(threads=p.schedule.threads)))
    except ChainError:  # no fragment program on the stream's threads (its values would not fit them)
        return (fragment,)


def _y_position(stages: tuple[Stage, ...]) -> int:
    """Y is the row once final: before the first stage that does not transform it (all later ones only
    read it), or after the last."""
    return next((k for k, stage in enumerate(stages) if not REGISTRY[stage.kind].transforms_row), len(stages))


def plan_as_dict(p: Plan) -> dict:
    """The plan as JSON-ready data, with the ledger evaluated at `ledger_tokens`."""
    data = asdict(p)
    for route in data["routes"]:
        # Added after kernels were built: unsplit (or read whole), a schedule is written as before the
        # split (the tiles) existed, as a spec key added later is (ops.added_key), and every plan.json
        # stays as it was.
        for added, before in (("row_split", 1), ("tiles", 1), ("tiles_held", False), ("ring_in_registers", False)):
            if route["schedule"][added] == before:
                del route["schedule"][added]
    if p.fragment_over_stream is None:
        del data["fragment_over_stream"]
    elif p.fragment_over_stream.threads is None:  # on variant "fragment"'s threads, written as before the stream's were weighed
        del data["fragment_over_stream"]["threads"]
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
