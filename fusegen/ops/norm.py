"""What both norms share: the columns their statistics cover (the extent) — the whole row, every head of
a row of heads × head_dim (Qwen3's and Gemma 3's QK-norm), or one column range [lo, hi) whose other
columns pass through (DeepSeek-V3's MLA normalises the first 512 of 576 columns) — with the spec keys
that choose it, its shapes, its reductions and their TileLang, torch and float64 forms.

A row extent reduces across the block (the exchange of codegen.KernelFrame.row_reduce); a head's
columns sit in consecutive lanes (a head is a whole number of vectors), so a per-head reduction is a
reshape reduced over its last axis, as the quantiser's groups are; a column range reduces across the
block with the columns outside it masked to 0."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

from pydantic import Field

from ..codegen import HEAD_DIM, HIDDEN, TILE, KernelFrame, all_of, indent, shape_source
from ..model import Constant, Dim, Tensor, parts_of, rendered
from ..model import Extent as NamedExtent
from . import ChainContext, Op, S, added_key, described, head_dim_constant

# The kernel module's names of a column range's bounds [NORM_START, NORM_END).
NORM_START, NORM_END = "NORM_START", "NORM_END"


def column_range(col: str = "j") -> str:
    """Whether row column `col` lies in the norm's range."""
    return all_of([f"{NORM_START} <= {col}", f"{col} < {NORM_END}"])


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

    @staticmethod
    def of(op, ctx: ChainContext) -> Extent:
        if op.over == "head":
            return Extent("head", heads=ctx.heads, padded_heads=ctx.padded_hidden // ctx.head_dim, head_dim=ctx.head_dim)
        if op.columns is not None:
            lo, hi = op.columns
            return Extent("columns", lo=lo, hi=hi)
        return Extent("row")

    @staticmethod
    def read(params: dict) -> Extent:
        return Extent(**params["extent"])

    def params(self) -> dict:
        return {"extent": asdict(self)}

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
        """The index of column j's statistic."""
        return frame.at(f"j // {HEAD_DIM}") if self.over == "head" else frame.at()

    def masked(self, value: str) -> str:
        """`value` on the extent's columns, 0 elsewhere (a reduction's terms)."""
        return f"T.if_then_else({column_range()}, {value}, 0.0)" if self.over == "columns" else value

    def only_inside(self, frame: KernelFrame, value: str) -> str:
        """`value` on the extent's columns; the others keep the row's value."""
        return f"T.if_then_else({column_range()}, {value}, row[{frame.at('j')}])" if self.over == "columns" else value

    def reduce(self, frame: KernelFrame, source: str, result: str, name: str) -> list[str]:
        """Sums `source` (a per-row buffer of the row's columns) over the extent into `result` (stat_shape)."""
        if self.over == "head":
            heads = frame.layout.rows(self.heads_in(frame.layout.padded_hidden), NamedExtent(self.head_dim, HEAD_DIM))
            return [f"T.reduce_sum(T.reshape({source}, {shape_source(heads)}), {result}, dim={len(heads) - 1})"]
        return frame.row_reduce(source, result, "sum", name)

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
    be laid out, split and shrunk."""

    def columns_multiple_of(self, op, ctx):
        # A per-head reduction reshapes the padded row into whole heads.
        return ctx.head_dim if op.over == "head" else 1

    def needs_whole_row(self, op, ctx) -> str | None:
        """Statistics over the row or a column range of it need those columns in one block; a head's columns
        lie in one part of a split row."""
        if op.over == "head":
            return None
        if op.columns is not None:
            lo, hi = op.columns
            return f"normalises over columns [{lo}, {hi}) of the row, not over each part"
        return "normalises over the whole row"

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

    def accepts_layout(self, op, ctx, vector: int, threads: int) -> bool:
        """Per head, the row tile (one block row's threads × vector) and the head must nest for the
        statistic's (heads, head_dim) view to map onto the threads — whole tiles per head, or whole heads per
        tile — and the threads that reduce one head must be a power of two (TileLang's butterfly reduce: all
        the tile's threads, or a head's share of them). A 96-column head on 256-column tiles failed layout
        inference ("loop layout is not injective"), on 768-column tiles the 12-thread reduce, on 96 threads of
        2 columns the 96-thread one (Phi-3's heads, found by a random spec)."""
        if op.over != "head":
            return True
        tile, head = threads * vector, ctx.head_dim
        reducing = threads if head % tile == 0 else head // vector if tile % head == 0 else 0
        return reducing > 0 and reducing & (reducing - 1) == 0

    def layout_rule(self, op, ctx) -> str | None:
        """accepts_layout in words."""
        if op.over != "head":
            return None
        return (
            f"per-head statistics need a head of {ctx.head_dim} columns to be a whole number of row tiles (32·k threads × 1, 2, "
            "4 or 8 columns, a power of two of threads) or to hold a power-of-two number of vectors"
        )

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
