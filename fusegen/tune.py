"""`fusegen tune` (GPU): searches the schedule space of every spec per token bucket and records the
winners in the tuning file that `fusegen build` reads.

A candidate is the spec with concrete schedule hints (variant × threads × block_m × prefetch × joint
reduction × blocks per SM × ring slots × where the stream's next row waits, over what the spec leaves
"auto"). Each one must compile, pass every CUDA check — so a replicated row layout, the silent 5–16× slow
case, can never be chosen — and match its reference on fresh random inputs before it is timed (CUDA-graph
replays, inputs rotated past L2, as `fusegen bench` times). A candidate replaces the planner's own choice only when it is faster by
more than MARGIN, so noise does not churn the file.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path

from pydantic import ValidationError

from .errors import ChainError, SpecError, one_line
from .model import DTYPE_BYTES, Plan, Schedule, TokenRange
from .plan import gathered_inputs, plan, staged_inputs
from .schedule import (
    FRAGMENT_SQUEEZE,
    FULL_SM_WARPS,
    SM_REGISTERS,
    STREAM_MIN_ELEMS_PER_THREAD,
    THREAD_CHOICES,
    WARP_THREADS,
    fragment_registers,
    power_of_two,
    registers_allotted,
    row_splits,
    short_row_streams,
    short_rows_block_m,
    thread_counts,
)
from .spec import KernelSpec, ScheduleHints
from .tuning import (
    BUCKETS,
    Bucket,
    BucketWinner,
    GpuWinners,
    Measured,
    Tuning,
    WinnerHints,
    checked_gpu_name,
    load_table,
    merged_tables,
    problem_summary,
    save_table,
    with_winners,
)

BLOCK_M_CHOICES = (1, 2, 4)
# Persistent-grid sizes tried for the stream variant (the planner's own count joins them as "auto").
BLOCKS_PER_SM_CHOICES = (2, 3, 4, 5, 6, 8)
# Fewer fp32 values per thread than this leave most threads idle between loads; more than the planner's
# hard limit spill.
MIN_ELEMS_PER_THREAD = 8
# Split candidates go below the planner's 3 KB parts (schedule.MIN_PART_BYTES) to 1 KB: q_b's 1.5 KB parts ran
# 1.53 µs at one token against 1.31 for 3 KB, close enough that smaller parts may win on other chains.
MIN_TUNED_PART_BYTES = 1024
MARGIN = 0.02
# Correctness is checked where it is cheap: the kernel's code is the same at every count, only the grid grows.
CHECKED_TOKENS_MAX = 256


@dataclass
class Candidate:
    hints: dict  # concrete WinnerHints fields
    plan: Plan
    rejected: str | None = None
    median_us: dict[int, float] = field(default_factory=dict)  # tokens -> µs
    # The program a planner rule replaced — the fragment program of a stream (variant auto streams some wide
    # rows: schedule.wide_stream, slower on 8 of the 28 specs it streamed in perf/probe17–18), one row a
    # block where schedule.short_rows put several — or the planner's program as planned where the build's
    # compile-time rules moved it (_with_build_replaced): quick times it.
    replaced_by_rule: bool = False


def _concrete(s: Schedule) -> dict:
    """A schedule's hints, every one concrete (row_split only where it splits, ring only where it is in
    registers: other winners are written as before those hints existed)."""
    split = {"row_split": s.row_split} if s.row_split > 1 else {}
    split |= {"ring": "registers"} if s.ring_in_registers else {}
    return split | {
        "variant": s.variant,
        "block_m": s.block_m,
        "threads": s.threads,
        "blk_k": s.blk_k or "auto",
        "prefetch": s.prefetch,
        "joint_reduction": s.joint_reduction,
        # A reread program's bound follows from its threads (schedule.reread_threads_per_sm), not a hint.
        "blocks_per_sm": (s.blocks_per_sm if s.variant != "reread" else None) or "auto",
        "ring_slots": s.ring_slots or "auto",
    }


def _worth_timing(p: Plan) -> bool:
    s = p.schedule
    if s.elems_per_thread < MIN_ELEMS_PER_THREAD:
        return False
    # Streaming without prefetch reads the per-token side inputs after the reductions: the stall the
    # ring exists to hide.
    side_inputs = any(t.shape[0].tokens for t in p.inputs[1:])
    return s.variant != "stream" or (s.elems_per_thread >= STREAM_MIN_ELEMS_PER_THREAD and (s.prefetch or not side_inputs))


def _with_hints(spec: KernelSpec, hints: dict) -> KernelSpec:
    """`spec` with `hints` over its schedule hints: a candidate's spec."""
    return spec.model_copy(update={"schedule": ScheduleHints.model_validate({**spec.schedule.model_dump(), **hints})})


def candidates(spec: KernelSpec) -> list[Candidate]:
    """Every distinct feasible schedule over the hints the spec leaves "auto"; the planner's own first, then
    where a rule of the planner's replaced one row a block (a stream, several rows), that program."""
    pinned = {key: value for key, value in spec.schedule.model_dump().items() if value != "auto"}
    axes = {
        "threads": thread_counts(spec),
        "block_m": tuple(
            sorted(
                {
                    *BLOCK_M_CHOICES,
                    short_rows_block_m(spec.hidden * DTYPE_BYTES[spec.dtype], gathers=False, warp_elems=0, one_row_streams=False),
                }
            )
        ),
        "prefetch": (True, False),
        # "auto": a stream schedule takes the joint reduction wherever the chain allows it (plan.py).
        "joint_reduction": ("auto", True, False),
        "variant": ("fragment", "stream", "reread") if spec.schedule.variant == "auto" else (spec.schedule.variant,),
        "blocks_per_sm": ("auto", *BLOCKS_PER_SM_CHOICES),
        "ring_slots": ("auto", 3),  # auto: the planner's two slots
        "ring": ("auto", "registers"),
    }
    free = {key: values for key, values in axes.items() if key not in pinned}
    default = plan(spec, "<tune>")
    found = {json.dumps(_concrete(default.schedule), sort_keys=True): Candidate(_concrete(default.schedule), default)}
    own, rule_off = default.schedule, None
    if own.variant in ("stream", "reread") and spec.schedule.variant == "auto":
        rule_off = {"variant": "fragment"}
    elif own.block_m > 1 and spec.schedule.block_m == "auto":
        rule_off = {"block_m": 1}
    if rule_off:
        replaced = plan(spec.model_copy(update={"schedule": spec.schedule.model_copy(update=rule_off)}), "<tune>")
        key = json.dumps(_concrete(replaced.schedule), sort_keys=True)
        found[key] = Candidate(_concrete(replaced.schedule), replaced, replaced_by_rule=True)
    # Rows split over blocks (each count of parts with the planner's other choices, then on twice the threads the
    # planner gives such a part): what wins at few tokens.
    splits = row_splits(spec, MIN_TUNED_PART_BYTES) if "row_split" not in pinned else ()
    combos = [dict(zip(free, combo)) for combo in itertools.product(*free.values())] + [{"row_split": parts} for parts in splits]
    for chosen in combos:  # a split's twice-the-threads combo is appended below, and reached by this loop too
        if chosen.get("variant") == "stream" and chosen.get("joint_reduction", "auto") != "auto":
            continue
        # The register ring is the stream's, one row ahead: no slots to choose (schedule.with_stream).
        streamed = chosen.get("variant", spec.schedule.variant) == "stream"
        if chosen.get("ring") == "registers" and (not streamed or chosen.get("ring_slots", "auto") != "auto"):
            continue
        try:
            p = plan(_with_hints(spec, chosen), "<tune>")
        except ChainError:
            continue
        if not _worth_timing(p):
            continue
        key = json.dumps(_concrete(p.schedule), sort_keys=True)
        found.setdefault(key, Candidate(_concrete(p.schedule), p))
        if set(chosen) == {"row_split"} and "threads" not in pinned and 2 * p.schedule.threads in THREAD_CHOICES:
            combos.append({**chosen, "threads": 2 * p.schedule.threads})
    return list(found.values())


def as_built(found_by_spec: list[tuple[KernelSpec, list[Candidate]]], scratch: Path, jobs: int) -> list[tuple[KernelSpec, list[Candidate]]]:
    """Each spec's candidates with the planner's own (the first) as `fusegen build` builds it — under the
    launch bound ptxas's registers give it (build.stage) — so that is what the others must beat, and what is
    recorded where it wins."""
    from .build import stage

    built = stage([found[0].plan for _, found in found_by_spec], scratch, jobs)
    return [(spec, _with_build_replaced(spec, found, b.plan)) for (spec, found), b in zip(found_by_spec, built)]


def _with_build_replaced(spec: KernelSpec, found: list[Candidate], built: Plan) -> list[Candidate]:
    """`found` with the planner's program as `fusegen build` built it first; where the build's compile-time
    rules moved it (a launch bound lowered for a spill or raised for residency, the fragment program kept over
    a stream), the program as planned follows, a program a rule replaced. Those rules decide on a threshold
    (schedule.spill_kept, WIDE_STREAM_MAX_FRAGMENT_BLOCKS) that held-out rows straddle: lowered at 32 bytes
    spilled, three rows of perf/probe85 gained 6–11 % and one lost 3 %, and fp16 LayerNorm → rescale → RoPE →
    FP8 24576 ran 0.74 × copy on the one block it was lowered to and 0.96 on its planned two, spill and all
    (perf/probe122, H100; such rows, writing only FP8, now keep their two blocks: perf/probe123). The program as
    planned is planned again from its hints, as every candidate is: the build's rules leave a kernel's identity
    as it was, and two modules of one identity serve one torch op, the newer's (runtime.register_ops), so the
    built program would time it. A candidate equal to the built program is the same program: timed once."""
    own = Candidate(_concrete(built.schedule), built)
    if [_concrete(r.schedule) for r in built.routes] == [_concrete(r.schedule) for r in found[0].plan.routes]:
        return [own, *found[1:]]
    as_planned = Candidate(found[0].hints, plan(_with_hints(spec, found[0].hints), "<tune>"), replaced_by_rule=True)
    return [own, as_planned, *(c for c in found[1:] if c.hints != own.hints)]


# `fusegen tune --quick` times the planner's own schedule and the candidates these rules rank highest.
QUICK_CANDIDATES = 10


def rank_key(p: Plan) -> tuple:
    """How promising a candidate is by the measurements behind the planner's rules (schedule.py), best
    first: 16-byte accesses; the rows per block of schedule.short_rows_block_m (one for rows of 2 KB and
    more: two or four rows per block ran 1.2–2× slower at 4096 and 7168; for shorter rows as many as 2 KB
    holds, or for rows that gather two or one: perf/probe19–21); 24–64 values per thread (fewer ran
    1.05–2× slower); for stream, about 32 KB of rows in flight per SM and 128 threads (every stream winner
    had both); for fragment, the planner's launch bound (one block or two: bounds past that are
    _tight_bounds' to pick); the values per thread nearest 32; then a power-of-two block, the joint
    reduction on, prefetch on. Values per thread before powers of two: a fresh full tune of three sweep
    specs (session 12) was won by 384, 160 and 96 threads where quick had timed only powers of two, and
    replaying quick over the committed full tunes so ranked finds the winner in 84 % of 165 buckets and one
    within 2 % in 96 % (powers of two first: 77 % and 91 %; docs/bench/tune/quick-check-s12.md)."""
    s = p.schedule
    elem_bytes = s.vector_bytes // s.vector_elems
    warp_elems = s.padded_hidden // WARP_THREADS
    in_flight = (s.blocks_per_sm or 0) * ((s.ring_slots or 1) - 1) * s.padded_hidden * elem_bytes
    return (
        s.vector_bytes < 16,
        s.block_m
        != short_rows_block_m(
            p.hidden * elem_bytes, gathered_inputs(p.stages) > 0, warp_elems, short_row_streams(p.hidden * elem_bytes, warp_elems)
        ),
        not 24 <= s.elems_per_thread <= 64,
        s.variant == "stream" and (s.threads != 128 or abs(math.log2(max(in_flight, 1) / (32 * 1024))) > 1),
        s.variant == "fragment" and (s.blocks_per_sm or 1) > 2,
        abs(math.log2(s.elems_per_thread / 32)),
        not power_of_two(s.threads),
        not s.joint_reduction,
        not s.prefetch,
        s.threads,
    )


# Launch bounds past two blocks per SM are tuning's to find (schedule.with_fragment_residency): on the planner's
# own fragment schedule the session-9 probe found +0.05–0.10 × copy at the tightest bounds its register
# estimate allows and collapses past them (docs/bench/sweep/ab.md runs 4–5), so quick times those two.
QUICK_BOUNDS = 2


def _tight_bounds(found: list[Candidate]) -> list[Candidate]:
    """The planner's own fragment schedule under the QUICK_BOUNDS tightest launch bounds whose register cap
    its estimate fits within FRAGMENT_SQUEEZE (tighter ones spilled), tightest first."""
    own = found[0].plan.schedule
    if own.variant != "fragment":
        return []
    need = fragment_registers(own, staged_inputs(found[0].plan.stages))
    bounded = [
        c
        for c in found[1:]
        if c.plan.schedule == replace(own, blocks_per_sm=c.plan.schedule.blocks_per_sm, reasons=c.plan.schedule.reasons)
        and c.plan.schedule.blocks_per_sm > max(own.blocks_per_sm or 1, 2)
        and need <= FRAGMENT_SQUEEZE * SM_REGISTERS // (c.plan.schedule.blocks_per_sm * own.threads)
    ]
    return sorted(bounded, key=lambda c: -c.plan.schedule.blocks_per_sm)[:QUICK_BOUNDS]


def _scaled_threads(found: list[Candidate], ratio: Fraction) -> list[Candidate]:
    """The planner's own fragment schedule on `ratio` × its threads, the one rank_key puts first. Twice the
    threads (half the values each): few tokens are latency-bound, where more threads per row win — 8- and
    256-token buckets of the committed full tunes went to 256 threads × 16 values where the planner took
    128 × 32 (docs/bench/tune/quick-check.md). Half the threads: a full tune of the sweep's two 2880-column
    quant rows that quick left under 0.93 found both fastest at 16384 tokens on 64 threads where the planner
    takes 128 (fp16 RMSNorm → RoPE → FP8 0.91 → 0.95 × copy as a fragment program under any launch bound;
    perf/probe100), and quick timed no count below the planner's."""
    own = found[0].plan.schedule
    if own.variant != "fragment":
        return []

    def same_but_threads(s: Schedule) -> tuple:
        return (s.variant, s.block_m, s.vector_elems, s.prefetch, s.joint_reduction, s.row_split)

    scaled = [
        c
        for c in found[1:]
        if c.plan.schedule.threads == own.threads * ratio and same_but_threads(c.plan.schedule) == same_but_threads(own)
    ]
    return sorted(scaled, key=lambda c: rank_key(c.plan))[:1]


# A full tune of five held-out rows under 0.80 × copy (perf/probe61, H200, 16384 tokens) was won in four by
# 24 warps an SM at 80 registers — 128 threads × 6 blocks or 256 × 3, 44–60 values a thread, three of them
# reading the side inputs where used: 1.15–1.42× the planner's schedule (fp32 LayerNorm → RoPE → FP8 5248
# and 11264, fp16 LayerNorm → RoPE 14464, bf16 RMSNorm → cache RoPE 10368). Quick's eight held one of the
# four: rank_key puts bounds past two blocks last and _tight_bounds bounds only the planner's own threads
# and staging. Quick times the two such candidates rank_key puts first (docs/bench/tune/quick-check-s32.md).
QUICK_FULL_SM_THREADS = FULL_SM_WARPS * WARP_THREADS
QUICK_FULL_SM = 2


def _full_sm(found: list[Candidate]) -> list[Candidate]:
    """Fragment candidates of one row a block, unsplit, holding QUICK_FULL_SM_THREADS threads an SM under
    their launch bound: for each thread count the staged one where the register estimate fits the bound's
    registers, else the one reading the side inputs where used; the QUICK_FULL_SM rank_key puts first."""
    side_inputs = staged_inputs(found[0].plan.stages)
    by_threads: dict[int, list[Candidate]] = {}
    for c in found[1:]:
        s = c.plan.schedule
        if s.variant == "fragment" and s.block_m == 1 and s.row_split == 1 and s.threads * (s.blocks_per_sm or 1) == QUICK_FULL_SM_THREADS:
            by_threads.setdefault(s.threads, []).append(c)
    picked = []
    for same_threads in by_threads.values():
        s = same_threads[0].plan.schedule
        allotted = registers_allotted(s.blocks_per_sm, s.threads)
        fits = [c for c in same_threads if fragment_registers(c.plan.schedule, side_inputs) <= allotted]
        staged = [c for c in fits if c.plan.schedule.prefetch]
        picked += sorted(staged or fits or [c for c in same_threads if not c.plan.schedule.prefetch], key=lambda c: rank_key(c.plan))[:1]
    return sorted(picked, key=lambda c: rank_key(c.plan))[:QUICK_FULL_SM]


# The stream with the next row in registers (ring = "registers") at the planner's thread count, timed against the
# planner's program on 24 held-out rows (perf/probe94, H200, 16384 tokens): at the most blocks an SM that ptxas
# compiles without a spill it won where the planner's program ran under 0.91 × copy (bf16 LayerNorm → e5m2 2880
# 0.79 → 0.86, fp16 RoPE → FP8 18432 0.74 → 0.90, fp16 LayerNorm → RoPE → FP8 16384 0.74 → 0.86) and lost 6–10 %
# where it ran above 0.92; nothing the planner knows before timing told the two apart (nor did the issue ratio:
# perf/probe97). Quick times the two with the most blocks an SM, where those wins were; on 13 held-out rows under
# 0.93 it found the ring the winner of four, +6–19 % (perf/probe95).
QUICK_REGISTER_RINGS = 2


def _register_rings(found: list[Candidate]) -> list[Candidate]:
    """Streams of one row a block holding the next row in registers, on the planner's own thread count, the
    QUICK_REGISTER_RINGS most blocks an SM first; of those at one count the one rank_key puts first."""
    own = found[0].plan.schedule
    by_blocks: dict[int, list[Candidate]] = {}
    for c in found[1:]:
        s = c.plan.schedule
        if s.ring_in_registers and s.threads == own.threads and s.block_m == 1 and s.row_split == 1:
            by_blocks.setdefault(s.blocks_per_sm, []).append(c)
    most = sorted(by_blocks, reverse=True)[:QUICK_REGISTER_RINGS]
    return [min(by_blocks[blocks], key=lambda c: rank_key(c.plan)) for blocks in most]


# The planner's parts at few tokens on twice their threads, where its threads would each hold this many vectors or
# more: on the H200 (perf/probe102, 8 tokens) 1.084 × on 14 such parts, held out on 33 fresh ones at 1.065 × (1.074 ×
# at one token), but with two rows 7–8 % slower — no rule of the planner's, a candidate quick times.
QUICK_SPLIT_SERIAL_VECTORS = 4


def _split_on_twice_threads(found: list[Candidate]) -> list[Candidate]:
    """The planner's split of the first bucket's count (its parts) on twice the threads, where a thread of the
    planner's would hold QUICK_SPLIT_SERIAL_VECTORS vectors or more."""
    few = found[0].plan.route_for(BUCKETS[0].measured_at).schedule
    if few.row_split == 1 or few.elems_per_thread // few.vector_elems < QUICK_SPLIT_SERIAL_VECTORS:
        return []
    doubled = [c for c in found[1:] if c.plan.schedule.row_split == few.row_split and c.plan.schedule.threads == 2 * few.threads]
    return sorted(doubled, key=lambda c: rank_key(c.plan))[:1]


def quick_candidates(found: list[Candidate], count: int = QUICK_CANDIDATES) -> list[Candidate]:
    """The planner's own schedule (always timed: the winner must beat it), the programs a rule of its or the
    build's replaced, its tightest launch bounds (_tight_bounds), its schedule on twice and on half the threads (_scaled_threads),
    two programs of 24 warps an SM (_full_sm), two streams with the next row in registers (_register_rings), its
    few-token parts on twice the threads where a thread holds many vectors (_split_on_twice_threads)
    and the others rank_key puts first up to `count`, taken from each variant in turn: which variant wins
    moved with the chain and the width (NOTES.md steps 14–15), so neither is left out."""
    bounds: list[Candidate] = []
    for c in [
        *(c for c in found[1:] if c.replaced_by_rule),
        *_tight_bounds(found),
        *_scaled_threads(found, Fraction(2)),
        *_scaled_threads(found, Fraction(1, 2)),
        *_full_sm(found),
        *_register_rings(found),
        *_split_on_twice_threads(found),
    ]:
        if c not in bounds:  # one candidate may be picked by two of these: timed once
            bounds.append(c)
    by_variant: dict[str, list[Candidate]] = {}
    for candidate in sorted(found[1:], key=lambda c: rank_key(c.plan)):
        if candidate not in bounds:
            by_variant.setdefault(candidate.plan.schedule.variant, []).append(candidate)
    turns = itertools.zip_longest(*by_variant.values())
    ranked = [c for turn in turns for c in turn if c is not None]
    return [found[0], *bounds, *ranked][:count]


def _compile_and_check(kernel_py: str, candidate_plan: Plan) -> str | None:
    """In a worker: compiles (filling TileLang's disk cache for the timing process) and runs the CUDA
    checks; returns why the candidate is rejected, or None."""
    from .compile import cuda_sources_of_file
    from .cuda_checks import check_cuda

    try:
        sources = cuda_sources_of_file(Path(kernel_py))
    except Exception as exc:  # TileLang raises many types; any of them rules the candidate out
        return f"does not compile: {str(exc).strip().splitlines()[-1][:200] if str(exc).strip() else type(exc).__name__}"
    failed = [f"{c.name}: {c.detail}" for c in check_cuda(candidate_plan, sources) if not c.ok]
    return "CUDA checks failed: " + "; ".join(failed) if failed else None


def compile_all(found_by_spec: list[tuple[KernelSpec, list[Candidate]]], scratch: Path, jobs: int) -> list[list]:
    """Builds every candidate's module, compiles and checks them all in one worker pool; returns the
    modules per spec (rejected candidates marked)."""
    from .checking import import_plan
    from .compile import in_worker_processes

    modules = [[import_plan(c.plan, scratch / f"{spec.name}_{i}") for i, c in enumerate(found)] for spec, found in found_by_spec]
    flat = [(module, candidate) for group, (_, found) in zip(modules, found_by_spec) for module, candidate in zip(group, found)]
    verdicts = in_worker_processes(_compile_and_check, [(str(Path(m.__file__).parent / "kernel.py"), c.plan) for m, c in flat], jobs)
    for (_, candidate), verdict in zip(flat, verdicts):
        candidate.rejected = verdict
    return modules


def measure(spec: KernelSpec, found: list[Candidate], modules: list, l2_bytes: int, progress) -> None:
    """Checks each compiled candidate against its reference, then times it at every bucket's count."""
    from .bench import GRAPH_CALLS, input_sets, time_graph
    from .checking import run_and_compare

    tokens_measured = [spec.tokens] if spec.tokens else [bucket.measured_at for bucket in BUCKETS]
    sets = {}  # every candidate of a spec takes the same inputs
    for candidate, module in zip(found, modules):
        progress(f"{spec.name} {candidate.hints['threads']}×{candidate.hints['block_m']}")
        if candidate.rejected:
            continue
        try:
            for tokens in tokens_measured:
                if tokens <= CHECKED_TOKENS_MAX or spec.tokens:
                    run_and_compare(module, tokens)
                if tokens not in sets:
                    sets[tokens] = input_sets(module, candidate.plan.ledger.fused_bytes(tokens), tokens, l2_bytes)
                candidate.median_us[tokens] = statistics.median(time_graph(module.kernel, sets[tokens], calls=GRAPH_CALLS))
        except AssertionError as exc:
            candidate.rejected = f"wrong results: {str(exc).splitlines()[0][:200]}"


def _overlap(a: TokenRange, b: TokenRange) -> tuple[int, int | None] | None:
    """The counts both ranges serve, as (first, last), or None."""
    first = max(a.first_tokens, b.first_tokens)
    lasts = [last for last in (a.last_tokens, b.last_tokens) if last is not None]
    last = min(lasts) if lasts else None
    return None if last is not None and last < first else (first, last)


def recorded_environment(env: dict, gpu: str | None) -> tuple[str, Measured]:
    """The GPU name (`gpu`, else the one the GPU reports) and where the numbers come from, as the tuning
    file holds them: checked before anything is tuned, since they reach generated kernels' docstrings.
    A value that does not fit is a SpecError naming where it came from."""
    name = (
        checked_gpu_name(gpu, "--gpu")
        if gpu is not None
        else checked_gpu_name(env["gpu"], "the GPU's reported name (choose one with --gpu)")
    )
    try:
        return name, Measured(**{key: env[key] for key in Measured.model_fields})
    except ValidationError as exc:
        first = exc.errors()[0]
        key = first["loc"][0]
        source = "FUSEGEN_COMMIT" if key == "commit" and os.environ.get("FUSEGEN_COMMIT") else f"the detected {key}"
        raise SpecError(source, "", first["msg"].removeprefix("Value error, ")) from None


def winners(spec: KernelSpec, found: list[Candidate], measured: Measured) -> GpuWinners:
    planner = found[0]
    if planner.rejected:
        raise RuntimeError(f"{spec.name}: the planner's own schedule failed on the GPU ({planner.rejected}); fix that first")
    # A spec with pinned tokens is timed at its count only, and that winner serves it.
    buckets = [Bucket(1, None, spec.tokens)] if spec.tokens else BUCKETS
    chosen_by_bucket = []
    for bucket in buckets:
        at = bucket.measured_at
        timed = [c for c in found if not c.rejected]
        best = min(timed, key=lambda c: c.median_us[at])
        base = planner.median_us[at]
        chosen = best if best.median_us[at] < base * (1 - MARGIN) else planner
        # Where the planner wins, each of its own routes keeps its part of the bucket: its rules divide buckets
        # (1 KB row parts up to 8 tokens and 3 KB ones to 64; four warps a row to 256), and the one count timed
        # says nothing against a route that did not run there. A candidate that wins runs the whole bucket, even
        # where its own plan routes part of the bucket elsewhere (one route to 256 tokens, another past it): that
        # other route never ran, and clipping to the timed one left counts no winner served.
        if chosen is planner:
            spans = [(r, span) for r in planner.plan.routes if (span := _overlap(r, bucket))]
        else:
            spans = [(chosen.plan.route_for(at), (bucket.first_tokens, bucket.last_tokens))]
        for route, (first, last) in spans:
            chosen_by_bucket.append(
                BucketWinner(
                    first_tokens=first,
                    last_tokens=last,
                    measured_at=at,
                    hints=WinnerHints.model_validate(_concrete(route.schedule)),
                    median_us=round(chosen.median_us[at], 3),
                    planner_median_us=round(base, 3),
                    candidates=len(timed),
                )
            )
    return GpuWinners(measured=measured, buckets=chosen_by_bucket)


def main(args) -> int:
    import torch
    from tqdm import tqdm

    from .bench import environment, retargeted
    from .build import collect_spec_files, load_and_plan

    env = environment()
    gpu, measured = recorded_environment(env, args.gpu)
    written = load_and_plan(collect_spec_files([Path(p) for p in args.paths]))
    specs = [spec for spec, _ in retargeted(written, args.hidden, args.dtype)]
    if args.shard is not None:
        specs = shard_of(specs, args.shard)
    else:
        count = gpu_count(args.gpus, torch.cuda.device_count())
        if count > 1:
            return tune_on_devices(args, [spec.name for spec in specs], count, gpu, env)
    tuning = Tuning.load(Path(args.tuning), gpu)
    table = tuning.table
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    scratch = Path(tempfile.mkdtemp(prefix="fusegen-tune-"))
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    changed = False
    found_by_spec = as_built([(spec, candidates(spec)) for spec in specs], scratch / "planner", args.jobs or os.cpu_count() or 1)
    if args.quick:
        found_by_spec = [(spec, quick_candidates(found, args.quick)) for spec, found in found_by_spec]
    count = sum(len(found) for _, found in found_by_spec)
    print(f"compiling and checking {count} candidates of {len(specs)} kernels")
    modules = compile_all(found_by_spec, scratch, args.jobs or os.cpu_count() or 1)
    report = []
    with tqdm(total=count, unit="candidate", dynamic_ncols=True) as bar:

        def progress(label):
            bar.set_description(label[:60])
            bar.update(1)

        for (spec, found), spec_modules in zip(found_by_spec, modules):
            measure(spec, found, spec_modules, l2, progress)
            result = winners(spec, found, measured)
            table = with_winners(table, spec, gpu, result)
            report.append(
                {
                    "kernel": spec.name,
                    "problem": problem_summary(spec),
                    "winners": result.model_dump(mode="json"),
                    "candidates": [{"hints": c.hints, "rejected": c.rejected, "median_us": c.median_us} for c in found],
                }
            )
            # Saved per kernel: a run cut short keeps what it measured.
            changed = save_table(Path(args.tuning), table) or changed
            write_report(out, report, env)
    close_report(out, report, env, args.tuning, changed)
    return 0


def write_report(out: Path, report: list[dict], env: dict) -> None:
    (out / "tune.json").write_text(json.dumps({"environment": env, "problems": report}, indent=1))


def close_report(out: Path, report: list[dict], env: dict, tuning: str, changed: bool) -> None:
    """tune.md beside tune.json, the table printed, and whether the tuning file changed."""
    text = render_report(report, env)
    (out / "tune.md").write_text(text)
    print(text)
    print(one_line(f"{tuning}: {'updated' if changed else 'unchanged'}; rebuild with `fusegen build` to use it"))


def gpu_count(asked: str, visible: int) -> int:
    """How many GPUs `--gpus` asks for ("all" or a count), at most the `visible` ones."""
    count = visible if asked == "all" else int(asked)
    if count > visible:
        raise SpecError("--gpus", "", f"asks for {count} GPUs; {visible} are visible (CUDA_VISIBLE_DEVICES chooses which)")
    return count


def shard_of(specs: list[KernelSpec], shard: tuple[int, int]) -> list[KernelSpec]:
    """Shard i of n: every n-th spec from the i-th, in the order the paths list them."""
    index, count = shard
    return specs[index::count]


def visible_devices(count: int) -> list[str]:
    """The first `count` devices as CUDA_VISIBLE_DEVICES names them for a child (or by index where it is
    unset): a shard pinned to one of them sees it as its device 0."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    names = [name.strip() for name in visible.split(",") if name.strip()] if visible else [str(i) for i in range(count)]
    return names[:count]


def shard_command(args, shard: int, count: int, jobs: int, gpu: str, workdir: Path) -> list[str]:
    """`fusegen tune` of one shard, as its own process: the same specs and options, its own tuning file and
    report (merged by tune_on_devices), this run's GPU name, its share of the compile workers."""
    command = [sys.executable, "-m", "fusegen", "tune", *args.paths]
    if args.hidden:
        command += ["--hidden", *map(str, args.hidden)]
    if args.dtype:
        command += ["--dtype", *args.dtype]
    if args.quick:
        command += ["--quick", str(args.quick)]
    return command + [
        "--jobs", str(jobs), "--gpu", gpu, "--tuning", str(workdir / "tuning.json"),
        "--out-dir", str(workdir / "out"), "--shard", f"{shard}/{count}",
    ]  # fmt: skip


def tune_on_devices(args, names: list[str], count: int, gpu: str, env: dict) -> int:
    """`fusegen tune --gpus N`: one process per GPU, each tuning every N-th spec on its own device (its own
    compile pool: the CPUs split between them), then their winners merged into the tuning file and their
    reports into one, in the specs' order. A shard that fails keeps what it measured before failing; the
    run says which failed and where its log is, and exits 1."""
    scratch = Path(tempfile.mkdtemp(prefix="fusegen-tune-shards-"))
    jobs = max(1, (args.jobs or os.cpu_count() or 1) // count)
    shards = []
    for shard, device in enumerate(visible_devices(count)):
        workdir = scratch / f"shard-{shard}"
        workdir.mkdir()
        with open(workdir / "log.txt", "w") as log:
            process = subprocess.Popen(
                shard_command(args, shard, count, jobs, gpu, workdir),
                env={**os.environ, "CUDA_VISIBLE_DEVICES": device},
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        shards.append((shard, device, workdir, process))
        print(f"shard {shard + 1}/{count} on GPU {device}: {len(names[shard::count])} kernel(s), log {workdir / 'log.txt'}")
    table = load_table(Path(args.tuning))
    report, failed = [], []
    for shard, device, workdir, process in shards:
        if process.wait():
            failed.append(f"shard {shard + 1} (GPU {device}) exited {process.returncode}: see {workdir / 'log.txt'}")
        if (workdir / "tuning.json").exists():
            table = merged_tables(table, load_table(workdir / "tuning.json"))
        if (workdir / "out" / "tune.json").exists():
            report += json.loads((workdir / "out" / "tune.json").read_text())["problems"]
    report.sort(key=lambda entry: names.index(entry["kernel"]))
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_report(out, report, env)
    close_report(out, report, env, args.tuning, save_table(Path(args.tuning), table))
    for line in failed:
        print(f"error: {line}", file=sys.stderr)
    return 1 if failed else 0


def render_report(report: list[dict], env: dict) -> str:
    lines = [
        f"tuned on {env['gpu']} ({env['date']}, commit {env['commit']})",
        "",
        "| kernel | tokens | winner (threads × block_m, prefetch, joint reduction) | µs | planner µs | gain | timed / rejected |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for entry in report:
        rejected = sum(1 for c in entry["candidates"] if c["rejected"])
        for bucket in entry["winners"]["buckets"]:
            h = bucket["hints"]
            tokens = TokenRange(bucket["first_tokens"], bucket["last_tokens"])
            at = bucket["measured_at"]
            span = (
                f"{tokens.label()} (at {at})" if tokens.serves(at) else f"{tokens.label()} (the planner's route; its bucket timed at {at})"
            )
            lines.append(
                f"| {entry['kernel']} | {span} | {_variant_label(h)} {h['threads']} × {h['block_m']}, "
                f"{h['prefetch']}, {h.get('joint_reduction', 'auto')} | {bucket['median_us']:.2f} | {bucket['planner_median_us']:.2f} | "
                f"{bucket['planner_median_us'] / bucket['median_us']:.2f}× | {bucket['candidates']} / {rejected} |"
            )
    return "\n".join(lines) + "\n"


def _variant_label(hints: dict) -> str:
    blocks = hints.get("blocks_per_sm", "auto")
    slots = hints.get("ring_slots", "auto")
    if hints["variant"] == "stream":
        return f"stream ({blocks}/SM, {slots} slots)"
    split = hints.get("row_split", "auto")
    return f"{hints['variant']} (rows in {split} parts)" if split != "auto" else hints["variant"]
