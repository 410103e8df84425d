"""Text helpers shared by the op fragment emitters: how a stage names rows, tokens and guarded loads.

Everything here renders plan data (already validated numbers and fixed identifiers) into TileLang or
torch source; no value from a spec reaches these strings except numbers and the checked kernel name,
and any other text goes in through `escaped` (comments, docstrings) or `string_literal`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Constant, Layout, Scratch, Tensor, exchange_buffer, partial_buffers

# The stream grid, a variable of the program's scope: the prim_func, named after the kernel, lives in
# that scope too, and a kernel name never starts with an underscore.
STREAM_GRID = "_grid"
# The module-level name of the row's width (kernel.py binds it); fragments write it where they use the width.
HIDDEN = "HIDDEN"
# The module-level name of a head's width (the spec's head_dim), bound by the stages that work per head
# (ops.head_dim_constant).
HEAD_DIM = "HEAD_DIM"
# How a reduction's per-thread partials combine across lanes and warps.
_ACROSS = {"sum": "sum", "max": "max", "absmax": "max"}


def escaped(text: str) -> str:
    """`text` made safe inside a double-quoted or triple-double-quoted Python string, or a comment: a
    backslash or quote is escaped, so neither can end the literal (no triple quote can appear), and every
    unprintable character (controls, NUL, line and paragraph separators such as U+2028 and U+0085,
    bidi overrides) is written as an escape, so no text starts a new line of source. Printable
    non-ASCII (→, ×) stays readable. Inside a string the escapes read back as the original text."""
    return "".join("\\" + c if c in '"\\' else c if c.isprintable() else ascii(c)[1:-1] for c in text)


def string_literal(text: str) -> str:
    """`text` as a Python string literal: every string the emitters put into generated source goes
    through here (or through `escaped` for docstrings and comments)."""
    return f'"{escaped(text)}"'


def literal(value: float) -> str:
    """A float as Python source that round-trips exactly (repr of a finite float always does)."""
    return repr(float(value))


def constant_line(constant: Constant) -> str:
    """`NAME = value  # doc`: an int as written, a float through `literal`, the doc escaped."""
    value = constant.value
    rendered = str(value) if isinstance(value, int) and not isinstance(value, bool) else literal(value)
    return f"{constant.name} = {rendered}  # {escaped(constant.doc)}"


@dataclass(frozen=True)
class KernelFrame:
    """Names visible inside `with T.Kernel(...) as block:`; the row fragment is `row` (block_m, columns)."""

    layout: Layout
    tokens: str  # "m" (dynamic) or the pinned count
    prefetch: bool = False  # side inputs were staged by the prologue (staged_column_param, staged_row_param)
    streamed: bool = False  # a persistent block looping over tokens (stream_rows); the row is `token`
    buffers: tuple[Scratch, ...] = ()  # the program's planned buffers (Route.scratch): the only ones allocated

    def planned(self, name: str) -> Scratch:
        """The planned buffer `name`; a buffer the plan does not list is an error."""
        planned = next((b for b in self.buffers if b.name == name), None)
        if planned is None:
            raise KeyError(f"buffer {name!r} is not in the plan")
        return planned

    def alloc(self, name: str) -> str:
        planned = self.planned(name)
        return f"{name} = T.alloc_{planned.scope}({planned.shape}, {string_literal(planned.dtype)})"

    @property
    def bm(self) -> int:
        return self.layout.block_m

    @property
    def columns(self) -> int:
        return self.layout.padded_hidden

    @property
    def hidden(self) -> int:
        return self.layout.hidden

    def _thread_of(self, row: str, column: str) -> str:
        """The block thread holding `column` of block row `row` (model.Layout.thread_and_index)."""
        layout = self.layout
        within_row = f"{column} // {layout.vector} % {layout.row_threads}"
        return within_row if self.bm == 1 else f"{row} * {layout.row_threads} + {within_row}"

    def _index_in_thread(self, column: str) -> str:
        layout = self.layout
        return f"{column} // {layout.row_tile} * {layout.vector} + {column} % {layout.vector}"

    def pin_row_layout(self, fragment: str, variables: tuple[str, str] = ("i", "j")) -> str:
        """Fixes the row fragment's thread mapping (model.Layout): each block row on its own whole warps,
        whose thread t owns `vector` contiguous columns every row_threads·vector columns, so every warp
        access is coalesced and 16-byte wide. Left to inference, the layout can be derived from the RoPE
        span loop (breaking the row reduction for small rows) or replicated across threads for block_m > 1
        (5–16× slower, still correct). `variables`: the lambda's parameters, named unlike any earlier
        loop variable (see staged_column_param) where a fragment is pinned after loops."""
        i, j = variables
        shape = f"({self.bm}, {self.columns})"
        return (
            f"T.annotate_layout({{{fragment}: T.Fragment({shape}, forward_thread_fn=lambda {i}, {j}: {self._thread_of(i, j)}, "
            f"forward_index_fn=lambda {i}, {j}: {self._index_in_thread(j)})}})"
        )

    @staticmethod
    def staged(param: str) -> str:
        return f"{param.lower()}_staged"

    def stage_inputs(self, tensors) -> list[str]:
        """Prologue loads of side inputs (plan Tensors): per-token ones (m, width) and gathered table rows
        into shared memory, per-column ones (hidden,) into registers; an index is read by its table's load."""
        lines = []
        for t in tensors:
            if t.per_token_row:
                lines += self.staged_row_param(t.param, t.shape[1].size, t.index)
            elif t.per_column:
                lines += self.staged_column_param(t)
        return lines

    def _column_load(self, tensor: Tensor, col: str) -> tuple[str, str | None]:
        """(the load of `tensor`'s value for row column `col`, the condition under which the column has
        one, or None where every column of the row does)."""
        if tensor.period:
            at, valid = f"{col} % {tensor.period}", None
        elif tensor.columns:
            start, end = tensor.columns
            at, valid = f"{col} - {start}", all_of([f"{start} <= {col}", f"{col} < {end}"])
        else:
            at, valid = col, None
        if self.layout.pads_columns and valid is None:
            valid = f"{col} < {HIDDEN}"
        return f"{tensor.param}[{at}]", valid

    def staged_column_param(self, tensor: Tensor) -> list[str]:
        """Prologue: a per-column parameter into registers, each thread holding exactly the columns it
        holds of its row: one copy per block row, on that row's threads (a replicated fragment). Columns
        without a value (padding, outside a norm's range) get 0. An offset (Tensor.offset) is added here,
        once per block rather than once per row (the plan stages it in float32)."""
        name, cols = self.staged(tensor.param), self.columns
        load, valid = self._column_load(tensor, "j")
        if tensor.offset:
            load = self.float_with_offset(load, tensor.offset)
        if valid:
            load = f"T.if_then_else({valid}, {load}, T.cast(0, {string_literal(self.planned(name).dtype)}))"
        # Not `j`: TileLang's builder takes a lambda parameter named like an earlier loop variable for
        # that variable, used outside its loop. The replica index is the block row.
        if self.bm > 1:
            thread_fn, replicate = f"lambda column, row: {self._thread_of('row', 'column')}", f", replicate={self.bm}"
        else:
            thread_fn, replicate = f"lambda column: {self._thread_of('', 'column')}", ""
        return [
            self.alloc(name),
            f"T.annotate_layout({{{name}: T.Fragment(({cols},), forward_thread_fn={thread_fn}, "
            f"forward_index_fn=lambda column: {self._index_in_thread('column')}{replicate})}})",
            f"for j in T.Parallel({cols}):",
            f"    {name}[j] = {load}",
        ]

    def staged_row_param(self, param: str, width: int, index: str | None = None) -> list[str]:
        """Prologue: a per-token parameter of `width` floats per row (or the row of table `param` that
        `index` names) into shared memory; TileLang puts the barrier before its first read."""
        name = self.staged(param)
        return [
            self.alloc(name),
            f"for i, j in T.Parallel({self.bm}, {width}):",
            f"    {name}[i, j] = {self._row_load(param, 'j', 'i', index)}",
        ]

    def row_reduce(self, source: str, result: str, op: str, name: str) -> list[str]:
        """Reduces each row of `source` (block_m, columns) into `result` (block_m,) with one barrier.

        TileLang's T.reduce_* over a whole row halves across warps through shared memory first, two
        barriers per halving above 32 lanes (NOTES.md). Here each thread folds its own values, a warp
        folds its lanes by shuffles, and one shared-memory exchange combines the warps."""
        return [*self.row_partials(source, op, name), *self.exchange(((name, op, result),))]

    def row_partials(self, source: str, op: str, name: str) -> list[str]:
        """Each row of `source` folded into `{name}_thread`: per thread, then across its warp by shuffles,
        so lane 0 of every warp holds the warp's partial. Relies on the pinned row layout: row i's thread
        t holds columns t·vector … of row i, `vector` at a time, and a warp holds one row only."""
        layout = self.layout
        bm, threads = self.bm, layout.row_threads
        across = _ACROSS[op]
        lanes, thread = partial_buffers(name)
        return [
            self.alloc(lanes),
            self.alloc(thread),
            f"T.reduce_{op}(T.reshape({source}, ({bm}, {layout.chunks}, {threads}, {layout.vector})), {lanes}, dim=3)",
            f"T.reduce_{across}({lanes}, {thread}, dim=1)",
            f"for i, t in T.Parallel({bm}, {threads}):",
            f"    {thread}[i, t] = T.warp_reduce_{across}({thread}[i, t])",
        ]

    def exchange(self, partials) -> list[str]:
        """Combines the warps' partials of one or more row reductions ((name, op, result), ...) through one
        shared array and one barrier: lane 0 of each warp writes its slots, then every thread folds them."""
        warps = max(1, self.layout.row_threads // 32)
        bm, threads = self.bm, self.layout.row_threads
        shared = exchange_buffer(tuple(name for name, _, _ in partials))
        lines = [
            self.alloc(shared),
            f"for i, t in T.Parallel({bm}, {threads}):",
            "    if t % 32 == 0:",
            *(f"        {shared}[i, {k}, t // 32] = {partial_buffers(name)[1]}[i, t]" for k, (name, _, _) in enumerate(partials)),
            f"for i in T.Parallel({bm}):",
            *(f"    {result}[i] = {shared}[i, {k}, 0]" for k, (_, _, result) in enumerate(partials)),
            f"    for w in T.serial(1, {warps}):",
        ]
        for k, (_, op, result) in enumerate(partials):
            slot = f"{shared}[i, {k}, w]"
            combined = f"T.max({result}[i], {slot})" if _ACROSS[op] == "max" else f"{result}[i] + {slot}"
            lines.append(f"        {result}[i] = {combined}")
        return lines

    def token(self, i: str = "i") -> str:
        if self.streamed:
            return "token"
        return f"block * {self.bm} + {i}" if self.bm > 1 else "block"

    def stream_rows(self, per_token, blocks_per_sm: int, slots: int) -> list[str]:
        """The stream variant's persistent loop up to the row: block b takes tokens b, b + grid, … (grid:
        STREAM_GRID); while
        one row is reduced the next slots − 1 rows' cp.async copies (X and, prefetched, the per-token side
        inputs: plan Tensors) fill the other slots of a shared ring. Every row commits the same number
        of cp.async groups (empty ones past the last token), so waiting for all but the newest
        (slots − 1) rows' groups leaves exactly the current row's copies complete. The caller indents
        the chain 4 spaces under it."""
        rings = [("X", "x_ring", HIDDEN, None)] + [(t.param, self.staged(t.param), t.shape[1].size, t.index) for t in per_token]

        def fetch(token: str, slot: str, guarded: bool) -> list[str]:
            copies = [
                f"T.async_copy({param}[{f'{index}[{token}]' if index else token}, 0:{width}], {ring}[{slot}, 0:{width}])"
                for param, ring, width, index in rings
            ]
            if not guarded:
                return copies
            empty = ["T.ptx_commit_group()"] * len(rings)
            return [f"if {token} < {self.tokens}:", *indent(copies, 4), "else:", *indent(empty, 4)]

        load = "x_ring[slot, j]"
        if self.layout.pads_columns:
            load = f'T.if_then_else(j < {HIDDEN}, T.cast({load}, "float32"), 0.0)'
        ahead, grid = slots - 1, STREAM_GRID
        return [
            # The launch bound lets ptxas keep blocks_per_sm blocks resident, as the grid assumes.
            f"T.annotate_min_blocks_per_sm({blocks_per_sm})",
            *(self.alloc(ring) for _, ring, _, _ in rings),
            # The block's first row exists (the grid is never larger than the token count).
            *fetch("block", "0", guarded=False),
            *(line for k in range(1, ahead) for line in fetch(f"block + {k} * {grid}", str(k), guarded=True)),
            f"for step in T.serial(T.ceildiv({self.tokens} - block, {grid})):",
            f"    token = block + step * {grid}",
            f"    slot = step % {slots}",
            *indent(fetch(f"token + {ahead} * {grid}", f"(step + {ahead}) % {slots}", guarded=True), 4),
            f"    T.ptx_wait_group({ahead * len(rings)})",
            f"    for i, j in T.Parallel(1, {self.columns}):",
            f"        row[i, j] = {load}",
        ]

    @property
    def rows_may_overhang(self) -> bool:
        """Only a block of several rows can run past the last token; one row per block never does."""
        return self.bm > 1

    @staticmethod
    def float_with_offset(value: str, offset: float) -> str:
        return f'(T.cast({value}, "float32") + {literal(offset)})'

    def column_param(self, tensor: Tensor, col: str = "j") -> str:
        """A per-column parameter (weight, bias) at row column `col`, zero on columns without a value
        (padding, outside a norm's range); float32 where it is guarded."""
        if self.prefetch:
            return f"{self.staged(tensor.param)}[{col}]"
        load, valid = self._column_load(tensor, col)
        return f'T.if_then_else({valid}, T.cast({load}, "float32"), 0.0)' if valid else load

    def row_param(self, param: str, col: str, i: str = "i", index: str | None = None) -> str:
        """A per-token parameter (cos, sin), or the row of table `param` at the token's `index` value;
        rows past the last token read nothing."""
        if self.prefetch:
            return f"{self.staged(param)}[{'slot' if self.streamed else i}, {col}]"
        return self._row_load(param, col, i, index)

    def _row_load(self, param: str, col: str, i: str, index: str | None = None) -> str:
        row = f"{index}[{self.token(i)}]" if index else self.token(i)
        load = f"{param}[{row}, {col}]"
        if self.rows_may_overhang:
            return f"T.if_then_else({self.token(i)} < {self.tokens}, {load}, 0.0)"
        return load

    def store_per_head(self, param: str, fragment: str, heads: int) -> list[str]:
        """Writes one float per row and head (a per-head rstd) from a (block_m, padded heads) fragment;
        the padding's heads and rows past the last token are not stored."""
        padded_heads = self.planned(fragment).shape[1]
        conditions = self._row_exists() + ([f"h < {heads}"] if padded_heads > heads else [])
        return [
            f"for i, h in T.Parallel({self.bm}, {padded_heads}):",
            *guarded(conditions, f"{param}[{self.token()}, h] = {fragment}[i, h]"),
        ]

    def store_per_row(self, param: str, value: str, trailing_index: str = "") -> list[str]:
        """Writes one float per row (mean, rstd, a per-token scale) from a (block_m,) fragment."""
        return [f"for i in T.Parallel({self.bm}):", *guarded(self._row_exists(), f"{param}[{self.token()}{trailing_index}] = {value}")]

    def _row_exists(self) -> list[str]:
        """The condition that block row i is a token, where a block's rows may run past the last."""
        return [f"{self.token()} < {self.tokens}"] if self.rows_may_overhang else []


def guarded(conditions: list[str], statement: str) -> list[str]:
    """`statement` under `if` for the conditions that apply (none: unguarded), indented by 4 in a loop."""
    if not conditions:
        return [f"    {statement}"]
    return [f"    if {' and '.join(conditions)}:", f"        {statement}"]


def indent(lines: list[str], spaces: int) -> list[str]:
    pad = " " * spaces
    return [pad + line if line else line for line in lines]


def all_of(conditions: list[str]) -> str:
    """The conjunction of TileLang conditions (T.And takes two)."""
    first, *rest = conditions
    return f"T.And({first}, {all_of(rest)})" if rest else first
