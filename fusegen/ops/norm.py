"""What both norms share: the columns their statistics cover (the extent) — the whole row, every head of
a row of heads × head_dim (Qwen3's and Gemma 3's QK-norm), or one column range [lo, hi) whose other
columns pass through (DeepSeek-V3's MLA normalises the first 512 of 576 columns) — with the spec keys
that choose it, its shapes, its reductions and their TileLang, torch and float64 forms.

A row extent reduces across the block (the exchange of codegen.KernelFrame.row_reduce); a head's
columns sit in consecutive lanes (a head is a whole number of vectors), so a per-head reduction is a
reshape reduced over its last axis, as the quantiser's groups are — where a head's lanes are a power of
two; where they are not, its power-of-two slices are reduced so and their sums added through shared
memory (head_slice); a column range reduces across the block with the columns outside it masked to 0."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

from pydantic import Field

from ..codegen import HEAD_DIM, HIDDEN, TILE, KernelFrame, all_of, indent, shape_source
from ..model import Constant, Dim, Scratch, Tensor, parts_of, rendered
from ..model import Extent as NamedExtent
from . import ChainContext, Op, S, added_key, described, head_dim_constant

# The kernel module's names of a column range's bounds [NORM_START, NORM_END).
NORM_START, NORM_END = "NORM_START", "NORM_END"


def column_range(col: str = "j") -> str:
    """Whether row column `col` lies in the norm's range."""
    return all_of([f"{NORM_START} <= {col}", f"{col} < {NORM_END}"])


# The factory's name of a two-level per-head reduction's slice width (head_slice), which it derives from
# its thread count and vector as it derives its chunks (emit: factory-level names).
HEAD_SLICE = "head_slice"
HEAD_SLICE_EXTENT = {
    HEAD_SLICE: (
        "vector * min(HEAD_DIM // vector & -(HEAD_DIM // vector), {row_threads} & -{row_threads})"
        "  # the columns of a head one power-of-two group of lanes sums (n & -n: the largest power of two dividing n)"
    )
}


def head_slice(head_dim: int, vector: int, row_threads: int) -> int:
    """The width of the slices a per-head statistic is summed in, where one butterfly cannot sum a whole
    head; 0 where it can. TileLang's reduce is an xor butterfly over a power of two of lanes, and a head
    nests in the row tile (row_threads × vector columns) either as whole tiles (all the tile's threads
    reduce) or as whole heads per tile (head_dim / vector lanes reduce). Otherwise — a bf16 head of 192
    columns is 24 16-byte vectors, a head of 384 on 256 threads spans tiles — the head is summed in slices
    of the largest power of two of lanes dividing both its lanes and the tile's threads (8 lanes, 64 columns,
    for the 192), whose sums the head then adds through shared memory: a barrier each way (slices to heads,
    heads to their lanes), and 16-byte vectors where only one-column ones nested before (bf16 heads of 192:
    0.62 × copy, perf/probe73; 0.97 with slices, perf/probe77)."""
    tile = row_threads * vector
    reducing = row_threads if head_dim % tile == 0 else head_dim // vector if tile % head_dim == 0 else 0
    if reducing and reducing & (reducing - 1) == 0:
        return 0
    lanes = head_dim // vector
    return vector * min(lanes & -lanes, row_threads & -row_threads)


def sums_head_slices(stage) -> bool:
    """Whether a stage was planned with a per-head statistic summed in slices (head_slice), whose sums
    threads read from shared memory after others wrote them."""
    return any(b.name.endswith("_slices_shared") for b in stage.scratch)


def slice_buffers(name: str) -> tuple[str, str, str]:
    """A two-level per-head reduction's slice sums (in the slice's lanes, then in shared memory) and the
    running sum of a head's slices."""
    return f"{name}_slices", f"{name}_slices_shared", f"{name}_head"


# A range boundary inside a vector leaves the vector's columns on both sides: the masked terms then fall
# to scalar code (seen: no vector writes to sumsq_terms with [3, 997] in fp16).
COLUMN_BOUNDARY = 8
COLUMNS_RULE = (
    f"two integers [lo, hi], 0 ≤ lo < hi ≤ hidden, each a multiple of {COLUMN_BOUNDARY} (hi may be hidden): "
    "the half-open column range the norm covers"
)


def over_field():
    return Field(
        **added_key("row"),
        json_schema_extra=described(
            "row: statistics over the row (or its column range); head: over each head of the top-level head_dim "
            "columns, weight/bias (head_dim,), mean/rstd (M, heads)."
        ),
    )


def columns_field():
    return Field(
        **added_key(None),
        min_length=2,
        max_length=2,
        description=COLUMNS_RULE,
        json_schema_extra=described(
            f"Only these columns are normalised ({COLUMNS_RULE}); weight/bias (hi − lo,); the other columns pass through unchanged."
        ),
    )


OverKey = Literal["row", "head"]
# The README's words for the keys (the Ops table rows of both norms).
NORM_KEYS = (
    "`over` = `row` (default) \\| `head` (per head of the top-level `head_dim`; weight/bias (head_dim,), mean/rstd (M, heads)), "
    "`columns` = [lo, hi] (0 ≤ lo < hi ≤ hidden, multiples of 8 or hi = hidden; only these columns normalised, the rest pass through; weight/bias (hi − lo,); "
    "not with `head_dim`)"
)


def check(op, ctx: ChainContext) -> list[tuple[str, str]]:
    """The extent's cross-field rules (op: a norm's spec, with `over` and `columns`)."""
    if op.over == "head" and ctx.head_dim is None:
        return [("over", "'head' needs the top-level head_dim (the row is heads × head_dim columns); set head_dim or over = 'row'")]
    if op.columns is None:
        return []
    lo, hi = op.columns
    if op.over == "head":
        return [("columns", "applies to over = 'row' only: a per-head norm covers every head whole; leave columns out")]
    if ctx.head_dim is not None:
        return [
            (
                "columns",
                f"cannot be combined with head_dim = {ctx.head_dim}: a column range is one span of the row, not of each head; "
                "leave one of them out",
            )
        ]
    if not 0 <= lo < hi <= ctx.hidden or lo % COLUMN_BOUNDARY or (hi % COLUMN_BOUNDARY and hi != ctx.hidden):
        return [("columns", f"must be {COLUMNS_RULE}; hidden = {ctx.hidden}, got [{lo}, {hi}]")]
    return []


@dataclass(frozen=True)
class Extent:
    """The columns a norm's statistics cover, as a stage's params hold it."""

    over: str  # "row" | "head" | "columns"
    lo: int = 0
    hi: int = 0
    heads: int = 1
    padded_heads: int = 1
    head_dim: int = 0
    head_slice: int = 0  # over = "head" summed in slices of this many columns (norm.head_slice), or 0: whole heads

    @staticmethod
    def of(op, ctx: ChainContext) -> Extent:
        if op.over == "head":
            layout = ctx.layout
            slices = head_slice(ctx.head_dim, layout.vector, layout.row_threads) if layout else 0
            return Extent("head", heads=ctx.heads, padded_heads=ctx.padded_hidden // ctx.head_dim, head_dim=ctx.head_dim, head_slice=slices)
        if op.columns is not None:
            lo, hi = op.columns
            return Extent("columns", lo=lo, hi=hi)
        return Extent("row")

    @staticmethod
    def read(params: dict) -> Extent:
        return Extent(**params["extent"])

    def params(self) -> dict:
        # A whole-head extent's params stay as they were before slices existed (plan.json unchanged).
        return {"extent": {k: v for k, v in asdict(self).items() if k != "head_slice" or v}}

    @property
    def whole_row(self) -> bool:
        return self.over == "row"

    def summary(self) -> str:
        if self.over == "head":
            return f", over {self.heads} heads of {self.head_dim}"
        if self.over == "columns":
            return f", columns [{self.lo}, {self.hi})"
        return ""

    def constants(self, norm: str) -> tuple[Constant, ...]:
        if self.over == "head":
            return (head_dim_constant(self.head_dim),)
        if self.over == "columns":
            return (
                Constant(NORM_START, self.lo, f"{norm}: the first column it normalises"),
                Constant(NORM_END, self.hi, f"{norm}: one past the last; the columns outside pass through"),
            )
        return ()

    # --- plan ---
    def per_column(self, param: str, arg: str, dtype: str, hidden: int, doc: str, offset: float = 0.0) -> Tensor:
        """A per-column input (weight, bias) over the extent's columns."""
        if self.over == "head":
            return Tensor(
                param,
                arg,
                dtype,
                (Dim(size=NamedExtent(self.head_dim, HEAD_DIM)),),
                "input",
                f"{doc}, the same for every head",
                offset=offset,
                period=HEAD_DIM,
            )
        if self.over == "columns":
            return Tensor(
                param,
                arg,
                dtype,
                (Dim(size=NamedExtent(self.hi - self.lo, f"{NORM_END} - {NORM_START}")),),
                "input",
                f"{doc} of columns [{self.lo}, {self.hi})",
                offset=offset,
                columns=(NORM_START, NORM_END),
            )
        return Tensor(param, arg, dtype, (Dim(size=hidden),), "input", doc, offset=offset)

    def statistic(self, param: str, arg: str, doc: str) -> Tensor:
        """A per-row output (mean, rstd): one per head with over = 'head'."""
        if self.over == "head":
            heads = self.heads_in(self.row_width)
            return Tensor(param, arg, "float32", (Dim(tokens=True), Dim(size=heads)), "output", f"{doc} per head")
        return Tensor(param, arg, "float32", (Dim(tokens=True),), "output", f"{doc} per row")

    def stat_shape(self, ctx: ChainContext) -> tuple[int, ...]:
        return ctx.rows(self.heads_in(ctx.padded_hidden)) if self.over == "head" else ctx.rows()

    def statistic_buffers(self, ctx: ChainContext, result: str, name: str, what: str) -> tuple[Scratch, ...]:
        """The buffer the statistic `result` (`what` it is) is summed into (reduce's, named `name`), with a
        two-level reduction's slice sums before it: the statistic then lives in shared memory, where every
        lane of a head reads it."""
        axis = "head" if self.over == "head" else "row"
        if not self.head_slice:
            return (Scratch(result, "fragment", self.stat_shape(ctx), "float32", f"{what} per {axis}, replicated across its threads"),)
        slices = ctx.rows(parts_of(ctx.padded_hidden, self.head_slice, HEAD_SLICE))
        in_lanes, shared, head = slice_buffers(name)
        return (
            Scratch(
                in_lanes,
                "fragment",
                slices,
                "float32",
                f"{name} of each {self.head_slice}-column slice of a head, by shuffles among its lanes",
            ),
            Scratch(shared, "shared", slices, "float32", f"{name}: the slices' sums, added per head after one barrier", barrier=True),
            # A sum kept in the shared result itself, read back and written at every slice, makes TileLang's
            # ThreadSync warn of a race it cannot rule out (each thread's own entry).
            Scratch(head, "local", (1,), "float32", f"{name}: the running sum of one head's slices, in a register"),
            Scratch(
                result,
                "shared",
                self.stat_shape(ctx),
                "float32",
                f"{what} per head, in shared memory: a head's lanes span slices",
                barrier=True,
            ),
        )

    @property
    def row_width(self) -> NamedExtent:
        """The row's width (unpadded) as the kernel names it; over = 'head' only."""
        return NamedExtent(self.heads * self.head_dim, HIDDEN)

    def heads_in(self, columns: int) -> int:
        """The heads of a (padded) row of `columns` columns, padding heads included."""
        return parts_of(columns, self.head_dim, HEAD_DIM)

    def axis(self) -> str:
        return f"head of {self.head_dim} columns" if self.over == "head" else "row"

    def partials(self, name: str) -> str | None:
        """A reduction over a head stays in its lanes (no exchange); the others cross the warps."""
        return None if self.over == "head" else name

    # --- kernel ---
    @property
    def count(self) -> str:
        """The number of columns a statistic averages over."""
        return {"row": HIDDEN, "head": HEAD_DIM, "columns": f"({NORM_END} - {NORM_START})"}[self.over]

    def mean(self, total: str) -> str:
        """`total` averaged over the count's columns, as a multiply by the reciprocal: nvcc divides by a
        constant that is not a power of two in ~10 instructions on every row (IEEE rounding, with a slow-path
        check); the reciprocal rounds once more (≤ 1 ulp, far inside the tolerances) and is exact for a
        power of two."""
        return f"{total} * (1.0 / {self.count})"

    def each_statistic(self, frame: KernelFrame, statements: list[str]) -> list[str]:
        """`statements` (indexed with at_statistic) for every statistic of the block."""
        if self.over == "head":
            return [frame.loop(("h", rendered(self.heads_in(frame.layout.padded_hidden)))), *indent(statements, 4)]
        return frame.per_row(statements)

    def at_statistic(self, frame: KernelFrame) -> str:
        """The index of the statistic each_statistic's statements are about."""
        return frame.at("h") if self.over == "head" else frame.at()

    def at_column(self, frame: KernelFrame) -> str:
        """The index of column j's statistic. One in shared memory (head_slice) is indexed by the first column
        of j's vector, the same head (a head is whole vectors): TileLang's vectorizer then reads it once a
        vector, where by j itself it gathers one read a column — and an 8-float gather failed to compile
        (make_ulonglong4 of 8 floats: bf16 LayerNorm over heads of 40 on 128 threads)."""
        if self.over != "head":
            return frame.at()
        return frame.at(f"(j - j % vector) // {HEAD_DIM}" if self.head_slice else f"j // {HEAD_DIM}")

    def masked(self, value: str) -> str:
        """`value` on the extent's columns, 0 elsewhere (a reduction's terms)."""
        return f"T.if_then_else({column_range()}, {value}, 0.0)" if self.over == "columns" else value

    def only_inside(self, frame: KernelFrame, value: str) -> str:
        """`value` on the extent's columns; the others keep the row's value."""
        return f"T.if_then_else({column_range()}, {value}, row[{frame.at('j')}])" if self.over == "columns" else value

    def reduce(self, frame: KernelFrame, source: str, result: str, name: str) -> list[str]:
        """Sums `source` (a per-row buffer of the row's columns) over the extent into `result` (stat_shape)."""
        if self.over != "head":
            return frame.row_reduce(source, result, "sum", name)
        columns = frame.layout.padded_hidden
        if not self.head_slice:
            heads = frame.layout.rows(self.heads_in(columns), NamedExtent(self.head_dim, HEAD_DIM))
            return [f"T.reduce_sum(T.reshape({source}, {shape_source(heads)}), {result}, dim={len(heads) - 1})"]
        slices = frame.layout.rows(parts_of(columns, self.head_slice, HEAD_SLICE), NamedExtent(self.head_slice, HEAD_SLICE))
        in_lanes, shared, head = slice_buffers(name)
        per_head = f"{HEAD_DIM} // {HEAD_SLICE}"
        return [
            frame.alloc(in_lanes),
            frame.alloc(shared),
            frame.alloc(head),
            f"T.reduce_sum(T.reshape({source}, {shape_source(slices)}), {in_lanes}, dim={len(slices) - 1})",
            frame.loop(("s", rendered(slices[-2]))),
            f"    {shared}[{frame.at('s')}] = {in_lanes}[{frame.at('s')}]",
            frame.loop(("h", rendered(self.heads_in(columns)))),
            f"    {head}[0] = 0.0",
            f"    for k in T.serial({per_head}):",
            f"        {head}[0] = {head}[0] + {shared}[{frame.at(f'h * ({per_head}) + k')}]",
            f"    {result}[{frame.at('h')}] = {head}[0]",
        ]

    def store(self, frame: KernelFrame, param: str, fragment: str) -> list[str]:
        if self.over != "head":
            return frame.store_per_row(param, fragment)
        return frame.store_per_head(param, fragment, self.heads_in(frame.layout.hidden))

    # --- torch reference and float64 oracle ---
    @property
    def reference_part(self) -> str:
        """The torch reference's name for the extent's columns, with the statistic's axis last."""
        return "v" if self.over == "row" else "part"

    def reference_split(self) -> list[str]:
        """Lines binding reference_part."""
        if self.over == "head":
            return [f"part = v.view(v.shape[0], {self.heads}, {self.head_dim})"]
        if self.over == "columns":
            return [f"part = v[:, {self.lo}:{self.hi}]"]
        return []

    def reference_join(self) -> list[str]:
        """Lines putting the normalised reference_part back into `v`."""
        if self.over == "head":
            return ["v = part.reshape(v.shape)"]
        if self.over == "columns":
            return [f"v = torch.cat([v[:, :{self.lo}], part, v[:, {self.hi}:]], dim=-1)"]
        return []

    def segments(self, hidden: int) -> list[tuple[int, int]]:
        """(first column, width) of each set of columns one statistic covers."""
        if self.over == "head":
            return [(h * self.head_dim, self.head_dim) for h in range(self.heads)]
        if self.over == "columns":
            return [(self.lo, self.hi - self.lo)]
        return [(0, hidden)]

    def oracle_statistic(self, per_segment):
        """The oracle's (M, segments) statistic as the output's shape: (M,) but per head."""
        return per_segment if self.over == "head" else per_segment[:, 0]


def oracle_extent(op, hidden: int, head_dim: int | None) -> Extent:
    """The extent of a validated norm spec over a row of `hidden` columns (the oracle reads specs, not stages)."""
    return Extent.of(op, ChainContext("float64", hidden, {}, head_dim=head_dim))


class NormOp(Op[S]):
    """What RMSNorm and LayerNorm answer alike, as ops.Op: their statistics' extent decides how the row may
    be split and shrunk. Any row layout holds a per-head statistic (head_slice): a head is a multiple of 8
    columns, so of every vector."""

    derived_extents = HEAD_SLICE_EXTENT

    def columns_multiple_of(self, op, ctx):
        return ctx.head_dim if self.pads_to_whole_heads(op, ctx) else 1

    def pads_to_whole_heads(self, op, ctx) -> bool:
        # A per-head reduction reshapes the padded row into whole heads.
        return op.over == "head"

    def meets_in_shared_memory(self, stage) -> bool:
        # A per-head statistic summed in slices: the slices' sums meet in shared memory.
        return sums_head_slices(stage)

    def needs_whole_row(self, op, ctx) -> str | None:
        """Statistics over the row or a column range of it need those columns in one block; a head's columns
        lie in one part of a split row."""
        if op.over == "head":
            return None
        if op.columns is not None:
            lo, hi = op.columns
            return f"normalises over columns [{lo}, {hi}) of the row, not over each part"
        return "normalises over the whole row"

    def row_only_keys(self, op) -> tuple[str, ...]:
        # The statistics (mean, rstd) come from the row before the weight and bias act on it.
        return tuple(key for key in ("weight", "bias") if getattr(op, key, False))

    # Passes over a row read in tiles for the statistics of the whole row (emit_statistics).
    statistic_passes: int

    def row_statistic_passes(self, op, ctx) -> int:
        return self.statistic_passes if op.over == "row" and op.columns is None else 0

    def tile_rule(self, op, ctx, tile_columns: int) -> str | None:
        """Statistics over the whole row come from passes over its tiles (emit_statistics); a head's lie in
        the tile holding it; a column range's are not summed tile by tile."""
        if self.row_statistic_passes(op, ctx):
            return None
        return super().tile_rule(op, ctx, tile_columns)

    def small_variant(self, op: dict, small: ChainContext, full: ChainContext) -> dict:
        """A column range keeps its place at the seed's small width: the columns after it stay as many (at
        most half the row), and it starts as far in, in proportion."""
        if op.get("columns") is None:
            return op
        lo, hi = op["columns"]
        after = min(full.hidden - hi, small.hidden // 2) // COLUMN_BOUNDARY * COLUMN_BOUNDARY
        end = small.hidden - after
        start = min(lo * small.hidden // full.hidden // COLUMN_BOUNDARY * COLUMN_BOUNDARY, end - COLUMN_BOUNDARY)
        return {**op, "columns": [start, end]}


def tile_pass(frame: KernelFrame, terms: str, term: str) -> list[str]:
    """One pass over the row's tiles (variant reread) adding each column's `term` (of `row`, the loaded
    tile) into `terms`, a fragment of the tile's layout: unrolled, so every tile's load is in flight at
    once, and only the running sums stay in registers, not the row."""
    at = frame.at("j")
    return [
        f"T.clear({terms})",
        f"for {TILE} in T.unroll({rendered(frame.layout.parts)}):",
        *indent([*frame.load_row("X", "row"), frame.loop(("j", frame.columns)), f"    {terms}[{at}] = {terms}[{at}] + {term}"], 4),
    ]
