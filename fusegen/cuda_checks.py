"""Reads the CUDA TileLang produced and checks what the seed's step 3 asks: wide row loads and stores,
the warp reductions' partials, and a row fragment that is not silently replicated across threads.
What each op's fragment must show (a vectorized sum of squares, contiguous RoPE accesses, a paired and
saturating fp8 convert) is that op's `cuda_checks`, built from the helpers here."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .model import Plan, Route, staged_buffer

_VECTOR_BYTES = {
    "uint4": 16,
    "float4": 16,
    "int4": 16,
    "ulonglong2": 16,
    "longlong2": 16,
    "uint2": 8,
    "float2": 8,
    "int2": 8,
    "ulonglong1": 8,
    "uint1": 4,
    "float1": 4,
    "int1": 4,
    "unsigned int": 4,
    "half2": 4,
    "bfloat162": 4,
}
_FP8_VECTOR = re.compile(r"fp8_e[45]_(\d+)_t")


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def _width(type_name: str) -> int:
    fp8 = _FP8_VECTOR.fullmatch(type_name)
    return int(fp8.group(1)) if fp8 else _VECTOR_BYTES.get(type_name, 0)


def global_access_widths(source: str, param: str) -> tuple[list[int], int]:
    """Byte widths of vector accesses to a global tensor (plain or cp.async into shared memory), and the
    count of scalar `Param[...]` accesses."""
    vector = [_width(t) for t in re.findall(r"\*\(([A-Za-z0-9_ ]+)\*\)\(" + param + r" \+", source)]
    copied = [int(w) for w in re.findall(r"cp_async_gs(?:_conditional)?<(\d+)>\([^;]*\(&\(" + param + r"\[", source)]
    scalar = len(re.findall(r"(?<![A-Za-z0-9_])" + param + r"\[", source)) - len(copied)
    return vector + copied, scalar


def row_access(source: str, param: str, expected: int, what: str) -> Check:
    widths, scalar = global_access_widths(source, param)
    narrowest = min(widths) if widths else 0
    if expected <= 4 and not widths:
        # The plan chose one element per access (a width whose rows are not vector-aligned).
        return Check(f"{what} {param} scalar as planned", scalar > 0, f"{scalar} scalar access(es); the plan expects {expected} B")
    ok = bool(widths) and narrowest >= expected and scalar == 0
    if scalar:
        detail = f"{scalar} scalar access(es) to {param}"
    elif not widths:
        detail = f"no vector access to {param} found"
    else:
        detail = f"{len(widths)} access(es), narrowest {narrowest} B (plan expects {expected} B)"
    return Check(f"{what} {param} vectorized", ok, detail)


def fragment_vector_store(source: str, fragment: str, what: str, expected_floats: int) -> Check:
    if expected_floats <= 1:
        return Check(what, True, "scalar as planned (one element per access)")
    widths = [_width(t) // 4 for t in re.findall(r"\*\((float\d)\*\)\(" + fragment + r" \+", source)]
    ok = bool(widths) and min(widths) >= expected_floats
    detail = f"float{min(widths)} writes" if widths else f"no vector writes to {fragment}"
    return Check(what, ok, detail)


def thread_bound(source: str, threads: int) -> Check:
    """The kernel tells nvcc that threadIdx.x < threads (emit.THREAD_BOUND), unfolded: TileLang knows the
    bound and folds a plain `threadIdx.x < threads` to true, which tells nvcc nothing."""
    told = re.findall(r"__builtin_assume\(\(int\(\(\(int\)threadIdx\.x\)\) < (\d+)\)\);", source)
    return Check("nvcc told threadIdx.x < threads", told == [str(threads)], f"assumed bounds {told}, threads {threads}")


def unrestricted(source: str, params: list[str]) -> Check:
    """The kernel declares these parameters without __restrict__ (schedule.with_pinned_side_inputs), so ptxas
    keeps their loads where the program puts them."""
    declared = {p: re.findall(rf"(\S+\*(?: __restrict__)?) {p}\b[,)]", source) for p in params}
    ok = all(found and not any("__restrict__" in d for d in found) for found in declared.values())
    return Check("pinned side inputs not __restrict__", ok, ", ".join(f"{p}: {found}" for p, found in declared.items()))


def access(name: str) -> str:
    """A regex of one access to buffer or parameter `name` in the CUDA, its index left open: name[i],
    ((float*)name)[i] (a buffer cast from the dynamic shared memory), or *(float2*)(name + i) (vectorized)."""
    return rf"(?:(?:\(\(float\*\))?{name}\)?\[[^\]]*\]|\*\(\w+\*\)\((?:\(\(float\*\))?{name}\)? \+ [^;]*\))"


def staged_rows_on_every_thread(source: str, buffers: list[str]) -> Check:
    """The prologue stores of the staged per-token rows (plan.whole_thread_extent) sit under no thread
    guard: inside `if (threadIdx.x < n)` ptxas would issue their loads only after the arithmetic on x."""
    stores = {name: re.compile(access(name) + " = ") for name in buffers}
    found, guarded, open_blocks = set(), [], []
    for line in source.splitlines():
        stripped = line.strip()
        if stripped.startswith("}"):
            open_blocks = open_blocks[:-1]
        for name, store in stores.items():
            if store.match(stripped):
                found.add(name)
                if any(re.search(r"threadIdx\.x\)+ <", header) for header in open_blocks):
                    guarded.append(stripped)
        if stripped.endswith("{"):
            open_blocks.append(stripped)
    missing = [name for name in buffers if name not in found]
    detail = "; ".join(guarded) or (f"no store to {', '.join(missing)} found" if missing else ", ".join(buffers))
    return Check("staged rows loaded on every thread", not guarded and not missing, detail)


def tile_loops(source: str, tiles: int, held: bool, passes: int) -> Check:
    """A reread program's loops over its tiles: the chain's `passes` statistics passes (schedule.statistic_passes;
    none where every statistic lies within a tile, as a norm over each head's) unrolled, every tile's load in
    flight, then the finishing pass, unrolled where the schedule holds the tiles (Schedule.tiles_held: nvcc
    then reuses the passes' loads, which it can only where each tile's address is a constant), a loop
    otherwise."""
    loops = re.findall(r"(#pragma unroll\s*)?for \(int (tile\w*) = 0; \2 < (\d+); \+\+\2\)", source)
    unrolled = [bool(pragma) for pragma, _, _ in loops]
    ok = len(loops) == passes + 1 and all(int(count) == tiles for _, _, count in loops) and all(unrolled[:-1]) and unrolled[-1] == held
    shown = ", ".join(f"{name} < {count}{' unrolled' if pragma else ''}" for pragma, name, count in loops)
    name = f"tile loops: {passes} statistics pass(es) unrolled, finishing " + ("unrolled (held)" if held else "a loop")
    return Check(name, ok, shown or "no tile loops")


def check_cuda(plan: Plan, sources: list[str]) -> list[Check]:
    """The checks of every program, each against the CUDA compiled from it."""
    programs = plan.programs
    if len(sources) != len(programs):
        raise ValueError(f"{plan.name}: {len(sources)} CUDA sources for {len(programs)} programs")
    if len(sources) == 1:
        return _check_route(plan, programs[0][0], sources[0])
    return [
        Check(f"program_{index}: {check.name}", check.ok, check.detail)
        for index, (served, source) in enumerate(zip(programs, sources))
        for check in _check_route(plan, served[0], source)
    ]


def _check_route(plan: Plan, route: Route, source: str) -> list[Check]:
    # Imported here, not above: each op module builds its checks from this module's helpers.
    from .ops import REGISTRY
    from .plan import staged_inputs
    from .schedule import statistic_passes
    from .spec import KernelSpec

    s = route.schedule
    checks = [thread_bound(source, s.threads), row_access(source, "X", s.vector_bytes, "row loads")]
    if plan.writes_y:
        checks.append(row_access(source, "Y", s.vector_bytes, "row stores"))
    if s.pinned_side_inputs:
        checks.append(unrestricted(source, [t.param for t in staged_inputs(route.stages) if t.per_column]))
    if s.variant == "reread":
        passes = statistic_passes(KernelSpec.model_validate(plan.spec))
        checks.append(tile_loops(source, s.tiles, s.tiles_held, passes))
    # The per-token side inputs' rows a prologue stages (not an output staged on its way out: column-major scales)
    per_token_rows = {staged_buffer(t.param) for t in staged_inputs(route.stages) if t.per_token_row}
    staged_rows = [b.name for b in route.scratch if b.scope == "shared" and b.name in per_token_rows]
    if staged_rows and s.variant != "stream":
        checks.append(staged_rows_on_every_thread(source, staged_rows))
    for stage in route.stages:
        checks += REGISTRY[stage.kind].cuda_checks(stage, source, s)
    per_thread = re.findall(r"float (\w+)_thread\[(\d+)\];", source)
    if per_thread:
        # Each thread holds one row (model.Layout), or the same columns of every block row where the rows share
        # the threads: a partial per row it holds; more means the warp shuffle would count copies.
        held = s.block_m if s.rows_share_threads else 1
        sizes = {name: int(size) for name, size in per_thread}
        checks.append(
            Check(
                "row reductions: one partial per thread" if held == 1 else f"row reductions: one partial per row, {held} per thread",
                all(size == held for size in sizes.values()),
                ", ".join(f"{name}: {size}" for name, size in sizes.items()),
            )
        )
        # The per-warp slot is chosen by logical lane t // 32; that is the physical warp only when the
        # partials' layout maps lane t to thread t, which the store's index shows.
        # Static shared arrays are indexed directly, dynamic ones through a (float*) cast.
        stores = {name: re.findall(r"(?:\(\(float\*\))?\w+_warps\)?\[([^\]]*)\] = " + name + r"_thread\[", source) for name in sizes}
        row_threads = s.threads if s.rows_share_threads else s.threads // s.block_m
        single_warp = row_threads <= 32  # one warp per row: its slot is a constant
        # Block row i's warps are its own (model.Layout), or every row's where they share the threads: the slot
        # is the block's warp, or with several exchanges per row, row i's part plus the warp within the row's threads.
        within_row = "" if row_threads == s.threads else rf"(?: (?:& {row_threads - 1}|% {row_threads})\))?"
        row_warp = re.compile(r"\(\(int\)threadIdx\.x\)" + within_row + r" >> 5\)")
        by_warp = single_warp or all(indices and all(row_warp.search(index) for index in indices) for indices in stores.values())
        checks.append(Check("row reductions: warp slot is the physical warp", by_warp, "; ".join(f"{n}: {v}" for n, v in stores.items())))
    fragment = {"fragment": "row", "stream": "row", "splitk": "chunk"}.get(s.variant)
    if fragment:
        declared = re.search(r"float " + fragment + r"\[(\d+)\];", source)
        size = int(declared.group(1)) if declared else None
        checks.append(
            Check(
                "row fragment not replicated",
                size == s.elems_per_thread,
                f"{size} floats per thread (plan: {s.elems_per_thread})",
            )
        )
    return checks
