"""Text helpers shared by the op fragment emitters: how a stage names rows, tokens and guarded loads.

Everything here renders plan data (already validated numbers and fixed identifiers) into TileLang or
torch source; no value from a spec reaches these strings except numbers and the checked kernel name,
and any other text goes in through `escaped` (comments, docstrings) or `string_literal`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Constant, Layout, Scratch, Tensor, exchange_buffer, partial_buffers, rendered, staged_buffer

# The stream grid, a variable of the program's scope: the prim_func, named after the kernel, lives in
# that scope too, and a kernel name never starts with an underscore.
STREAM_GRID = "_grid"
# The part of its row a block of a split row holds (Schedule.row_split): the grid's second index.
PART = "part"
# The tile of its row a reread program works on (Schedule.tiles): the variable of its loops over the tiles.
TILE = "tile"
# The module-level name of the row's width (kernel.py binds it); fragments write it where they use the width.
HIDDEN = "HIDDEN"
# The module-level name of a head's width (the spec's head_dim), bound by the stages that work per head
# (ops.head_dim_constant).
HEAD_DIM = "HEAD_DIM"
# The extents a program's factory derives from its parameters (model.Layout.row_threads, .chunks, .warps),
# as source, each after those it uses: {row_threads} is one block row's threads as the factory names them.
DERIVED_EXTENTS = {
    "part_columns": "HIDDEN // row_split  # the width of one part of a row, each part on a block of its own",
    "tile_columns": "HIDDEN // tiles  # the width of one tile of the row: one vector a thread",
    "row_threads": "threads // block_m  # one block row's threads",
    "chunks": "{columns} // ({row_threads} * vector)  # vectors each thread holds of a row",
    "warps": "{row_threads} // 32",
}


def layout_functions(row_threads: str, one_row: bool, shared_threads: bool = False) -> dict[str, list[str]]:
    """The pinned row layout (model.Layout.thread_and_index) as named functions of a factory
    (T.Fragment's forward_thread_fn and forward_index_fn), by name: each block row on `row_threads`
    threads of its own (or with `shared_threads` every row on all of them), whose thread t holds `vector`
    contiguous columns of every row_threads·vector-column tile of that row, so every warp access is
    coalesced and 16 bytes wide.
    Defined outside the prim_func, their parameters cannot be taken for the kernel's loop variables. A
    one-row program's row is 1-D: its layout is the per-column inputs' too (KernelFrame.column_layout)."""
    if one_row:
        return {
            "row_thread": [
                "def row_thread(j):",
                '    """The thread holding column j of the row: vectors go to the threads in turn."""',
                f"    return j // vector % {row_threads}",
            ],
            "row_index": [
                "def row_index(j):",
                '    """Where that thread holds it: one vector per threads·vector-column tile, its column within the vector."""',
                f"    return j // (vector * {row_threads}) * vector + j % vector",
            ],
            "on_row_threads": [
                "def on_row_threads(extent, start, step=1):",
                '    """The layout of a loop over `extent` columns of the row from `start`, `step` apart (a span, its',
                "    pairs): each iteration on the thread that holds its column. Inferred from the loop's accesses,",
                '    a loop over a span at column 0 would be spread over all the threads as predicated iterations."""',
                "",
                "    def iteration_thread(k):",
                "        return row_thread(start + k * step)",
                "",
                "    return T.Fragment((extent,), forward_thread_fn=iteration_thread)",
            ],
        }
    if shared_threads:
        # Every block row on all the threads: row i's column j where every row's column j is, in registers of
        # its own after the rows before it; a per-column input is one copy, held where each row's column is.
        thread_of_row, index_of_row, copy = "", "i * chunks * vector + ", ""
        row_said, copy_said = "every row on all the threads, which", "one copy that every row reads"
        index_said = "after the registers of the rows before row i (chunks · vector each), one vector per threads·vector-column tile"
        column_said = "row 0's"
    else:
        thread_of_row, index_of_row, copy = f"i * {row_threads} + ", "", f"row * {row_threads} + "
        row_said, copy_said = "the row's own threads", "replicated over the block rows: block row `row`'s copy"
        index_said = "one vector per row_threads·vector-column tile"
        column_said = "the same in every copy"
    return {
        "row_thread": [
            "def row_thread(i, j):",
            f'    """The thread holding column j of block row i: {row_said} take its vectors in turn."""',
            f"    return {thread_of_row}j // vector % {row_threads}",
        ],
        "row_index": [
            "def row_index(i, j):",
            f'    """Where that thread holds it: {index_said}, its column within the vector."""',
            f"    return {index_of_row}j // (vector * {row_threads}) * vector + j % vector",
        ],
        "column_thread": [
            f"def column_thread({'column' if shared_threads else 'column, row'}):",
            f'    """row_thread for a per-column input, {copy_said}."""',
            f"    return {copy}column // vector % {row_threads}",
        ],
        "column_index": [
            "def column_index(column):",
            f'    """row_index for a per-column input: {column_said}."""',
            f"    return column // (vector * {row_threads}) * vector + column % vector",
        ],
    }


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
    """Names visible inside `with T.Kernel(...) as block:` (`as (block, part)` where a row is split over
    blocks); the row fragment is `row` (block_m, columns)."""

    layout: Layout
    tokens: str  # "m" (dynamic) or the pinned count
    prefetch: bool = False  # side inputs were staged by the prologue (staged_column_param, staged_row_param)
    streamed: bool = False  # a persistent block looping over tokens (stream_rows); the row is `token`
    buffers: tuple[Scratch, ...] = ()  # the program's planned buffers (Route.scratch): the only ones allocated
    # The factory serves routes with and without prefetch and takes it as a parameter: the prologue stages
    # under `if prefetch:`, and each read picks the staged copy or the input when the program is traced.
    prefetch_parameter: bool = False
    # The variable naming the block's part of the row (in_part): the grid's for a split row, the tile
    # loop's for a reread one (whose stages then run a tile at a time: ops.Op.emit_tile).
    part: str = PART

    @property
    def tiled(self) -> bool:
        return self.part == TILE

    def planned(self, name: str) -> Scratch:
        """The planned buffer `name`; a buffer the plan does not list is an error."""
        planned = next((b for b in self.buffers if b.name == name), None)
        if planned is None:
            raise KeyError(f"buffer {name!r} is not in the plan")
        return planned

    def alloc(self, name: str) -> str:
        planned = self.planned(name)
        return f"{name} = T.alloc_{planned.scope}({shape_source(planned.shape)}, {string_literal(planned.dtype)})"

    @property
    def one_row(self) -> bool:
        """A block of one row: the program indexes per-row buffers without a row axis (model.row_shape)."""
        return self.layout.block_m == 1

    def at(self, *columns: str) -> str:
        """The index of block row i's entry at `columns` in a per-row buffer (model.row_shape)."""
        if self.one_row:
            return ", ".join(columns) or "0"
        return ", ".join(("i", *columns))

    def loop(self, *axes: tuple[str, str]) -> str:
        """The T.Parallel header over block row i and the (variable, extent) axes; one row has no row axis."""
        if not self.one_row:
            axes = (("i", self.bm), *axes)
        return f"for {', '.join(v for v, _ in axes)} in T.Parallel({', '.join(e for _, e in axes)}):"

    def per_row(self, statements: list[str]) -> list[str]:
        """`statements` (about block row i, indexed with `at`) for each row: in a loop over the block's
        rows, or as they are where the block has one."""
        return statements if self.one_row else [self.loop(), *indent(statements, 4)]

    @property
    def column_layout(self) -> tuple[str, str]:
        """The layout functions of a per-column input: those of a one-row program's row (the same map)."""
        return ("row_thread", "row_index") if self.one_row else ("column_thread", "column_index")

    @property
    def bm(self) -> str:
        """Rows per block as the program writes them: 1, or its factory's `block_m`."""
        return rendered(self.layout.block_m)

    @property
    def columns(self) -> str:
        """The row's width as the program writes it: HIDDEN, the factory's padded `columns`, or split-K's chunk."""
        return rendered(self.layout.padded_hidden)

    @property
    def hidden(self) -> int:
        return self.layout.hidden

    @property
    def width(self) -> str:
        """The unpadded columns the block holds of its row, as the program writes them: HIDDEN, or a part's."""
        return rendered(self.layout.hidden)

    def in_part(self, index: str, per_part: int) -> str:
        """`index` of an axis that a split row's parts share out, `per_part` entries each (its columns,
        heads or groups), as an index of the whole row's: offset to the block's part. As it is unsplit."""
        if self.layout.parts == 1:
            return index
        count = rendered(per_part)
        # A count written as an expression (part_columns // HEAD_DIM) is bracketed: part times the count.
        base = f"{self.part} * ({count})" if " " in count else f"{self.part} * {count}"
        return base if index == "0" else f"{base} + {index}"

    def load_row(self, param: str, fragment: str) -> list[str]:
        """The block's rows of a (tokens, hidden) input into a fragment of the row's shape, from the first
        column of the block's part: a T.copy, or a loop with padding columns 0 where the block holds a padded
        part of a split row (split_padding) or its rows share their threads."""
        if not (self.split_padding or self.layout.shared_threads):
            return [f"T.copy({param}[{self.token('0')}, {self.in_part('0', self.layout.hidden)}], {fragment})"]
        token = self.token()
        if self.layout.shared_threads:
            # A block row past the last token reads the last token's row, whose results it never stores: a
            # thread's loads of its R rows then carry no guard that differs from row to row, and ptxas issues
            # them back to back. Guarded (such rows read as zeros), it issued each vector after the previous
            # one's conversion (perf/probe109: bf16 LayerNorm → FP8 2880 on 2 rows a block ran 0.52 × copy).
            token = f"T.min({token}, {self.tokens} - 1)"
        dtype = string_literal(self.planned(fragment).dtype)
        load = f"T.cast({param}[{token}, {self.in_part('j', self.layout.hidden)}], {dtype})"
        if self.layout.pads_columns:
            load = f"T.if_then_else(j < {self.width}, {load}, T.cast(0, {dtype}))"
        return [self.loop(("j", self.columns)), f"    {fragment}[{self.at('j')}] = {load}"]

    def store_row(self, fragment: str, param: str, per_part: int | None = None) -> list[str]:
        """Stores a fragment of the row's shape into the block's rows of a (tokens, N) output, N a row's
        columns or (`per_part` a part's) its groups, from the block's part on; padding not stored."""
        per_part = self.layout.hidden if per_part is None else per_part
        if not self.split_padding:
            return [f"T.copy({fragment}, {param}[{self.token('0')}, {self.in_part('0', per_part)}])"]
        return [
            f"for j in T.Parallel({rendered(self.planned(fragment).shape[-1])}):",
            f"    if j < {rendered(per_part)}:",
            f"        {param}[{self.token('0')}, {self.in_part('j', per_part)}] = {fragment}[j]",
        ]

    @property
    def split_padding(self) -> bool:
        """Whether the block holds a padded part of a split row. T.copy masks a row's padding by the end of
        the tensor's row, which bounds only the last part: the other parts' padding would read and write
        the next part's first columns. Their copies are loops masked at the part's end instead."""
        return self.layout.parts > 1 and self.layout.pads_columns

    def pin_row_layout(self, fragment: str) -> str:
        """Fixes the row fragment's thread mapping (layout_functions' row_thread, row_index). Left to
        inference, the layout can be derived from the RoPE span loop (breaking the row reduction for small
        rows) or replicated across threads for block_m > 1 (5–16× slower, still correct)."""
        shape = shape_source(self.layout.rows(self.layout.padded_hidden))
        return f"T.annotate_layout({{{fragment}: T.Fragment({shape}, forward_thread_fn=row_thread, forward_index_fn=row_index)}})"

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
            at, valid = self.in_part(col, self.layout.hidden), None
        if self.layout.pads_columns and valid is None:
            valid = f"{col} < {self.width}"
        return f"{tensor.param}[{at}]", valid

    def staged_column_param(self, tensor: Tensor) -> list[str]:
        """Prologue: a per-column parameter into registers, each thread holding exactly the columns it
        holds of its row: one copy per block row, on that row's threads (a replicated fragment). Columns
        without a value (padding, outside a norm's range) get 0. An offset (Tensor.offset) is added here,
        once per block rather than once per row (the plan stages it in float32)."""
        name, cols = staged_buffer(tensor.param), self.columns
        load, valid = self._column_load(tensor, "j")
        if tensor.offset:
            load = self.float_with_offset(load, tensor.offset)
        if valid:
            load = f"T.if_then_else({valid}, {load}, T.cast(0, {string_literal(self.planned(name).dtype)}))"
        thread_fn, index_fn = self.column_layout
        replicate = "" if self.one_row or self.layout.shared_threads else f", replicate={self.bm}"
        return [
            self.alloc(name),
            f"T.annotate_layout({{{name}: T.Fragment(({cols},), forward_thread_fn={thread_fn}, forward_index_fn={index_fn}{replicate})}})",
            f"for j in T.Parallel({cols}):",
            f"    {name}[j] = {load}",
        ]

    def staged_row_param(self, param: str, width: int, index: str | None = None) -> list[str]:
        """Prologue: a per-token parameter of `width` floats per row (or the row of table `param` that
        `index` names) into shared memory; TileLang puts the barrier before its first read."""
        name = staged_buffer(param)
        passes = self.planned(name).shape[-1]  # whole passes of the row's threads (plan.whole_thread_extent)
        padded = passes != width
        why = "# every thread loads (the last entry again past the row): under a branch ptxas would issue it late"
        return [
            self.alloc(name),
            *([why] if padded else []),
            self.loop(("j", rendered(passes))),
            f"    {name}[{self.at('j')}] = {self._row_load(param, f'T.min(j, {rendered(width)} - 1)' if padded else 'j', 'i', index)}",
        ]

    def row_reduce(self, source: str, result: str, op: str, name: str) -> list[str]:
        """Reduces each row of `source` (block_m, columns) into `result` (block_m,) with one barrier.

        TileLang's T.reduce_* over a whole row halves across warps through shared memory first, two
        barriers per halving above 32 lanes (NOTES.md). Here each thread folds its own values, a warp
        folds its lanes by shuffles, and one shared-memory exchange combines the warps; where rows share warps,
        or a block holds several rows on a warp each (Layout.reduces_within_lanes), shuffles among a row's
        lanes alone."""
        return [*self.row_partials(source, op, name), *self.exchange(((name, op, result),))]

    def row_partials(self, source: str, op: str, name: str) -> list[str]:
        """Each row of `source` folded into `{name}_thread`: per thread, then, where the warps exchange, across
        each warp by shuffles, so lane 0 of every warp holds the warp's partial (exchange folds the rest;
        where a row reduces within its lanes, exchange's shuffles are the whole fold). Relies on the pinned
        row layout: row i's thread t holds columns t·vector … of row i,
        `vector` at a time."""
        layout = self.layout
        lanes, thread = partial_buffers(name)
        vectors = layout.rows(layout.chunks, layout.row_threads, layout.vector)
        chunk_axis = len(vectors) - 3
        folded = [
            self.alloc(lanes),
            self.alloc(thread),
            f"T.reduce_{op}(T.reshape({source}, {shape_source(vectors)}), {lanes}, dim={len(vectors) - 1})",
            f"T.reduce_{op}({lanes}, {thread}, dim={chunk_axis})",
        ]
        if layout.reduces_within_lanes:
            return folded
        return [
            *folded,
            self.loop(("t", rendered(layout.row_threads))),
            f"    {thread}[{self.at('t')}] = T.warp_reduce_{op}({thread}[{self.at('t')}])",
        ]

    def exchange(self, partials) -> list[str]:
        """Combines the warps' partials of one or more row reductions ((name, op, result), ...) through one
        shared array and one barrier: lane 0 of each warp writes its slots, then every thread folds them.
        Where a row reduces within its lanes (Layout.reduces_within_lanes), they fold their partials by shuffles
        (TileLang's reduce over the lanes of a row: an xor butterfly inside the warp, every lane left with the
        result), no barrier."""
        if self.layout.reduces_within_lanes:
            lanes_axis = len(self.layout.rows(self.layout.row_threads)) - 1
            return [
                "# each row lies within one warp: its lanes fold their partials by shuffles, no barrier",
                *(f"T.reduce_{op}({partial_buffers(name)[1]}, {result}, dim={lanes_axis})" for name, op, result in partials),
            ]
        warps = rendered(self.layout.warps)
        shared = exchange_buffer(tuple(name for name, _, _ in partials))
        at = self.at()
        fold = [
            *(f"{result}[{at}] = {shared}[{self.at(str(k), '0')}]" for k, (_, _, result) in enumerate(partials)),
            f"for w in T.serial(1, {warps}):",
        ]
        for k, (_, op, result) in enumerate(partials):
            slot = f"{shared}[{self.at(str(k), 'w')}]"
            combined = f"T.max({result}[{at}], {slot})" if op == "max" else f"{result}[{at}] + {slot}"
            fold.append(f"    {result}[{at}] = {combined}")
        return [
            self.alloc(shared),
            self.loop(("t", rendered(self.layout.row_threads))),
            "    if t % 32 == 0:",
            *(
                f"        {shared}[{self.at(str(k), 't // 32')}] = {partial_buffers(name)[1]}[{self.at('t')}]"
                for k, (name, _, _) in enumerate(partials)
            ),
            *self.per_row(fold),
        ]

    def token(self, i: str = "i") -> str:
        if self.streamed:
            return "token"
        return f"block * {self.bm} + {i}" if self.layout.block_m > 1 else "block"

    def stream_rows(self, per_token, blocks_per_sm: int, slots: int, x_in_registers: bool = False) -> list[str]:
        """The stream variant's persistent loop up to the row: block b takes tokens b, b + grid, … (grid:
        STREAM_GRID). While one row is reduced, the next slots − 1 rows' cp.async copies (X and, prefetched,
        the per-token side inputs: plan Tensors) fill the other slots of a shared ring — or, `x_in_registers`,
        the next row's X is loaded into the fragment x_next (each thread the columns it reads back: no
        shared pass, no barrier for it) and only the side inputs go through the ring. Every row commits the
        same number of cp.async groups (empty ones past the last token), so waiting for all but the newest
        (slots − 1) rows' groups leaves exactly the current row's copies complete. The caller indents the
        chain 4 spaces under it."""
        side_rings = [(t.param, staged_buffer(t.param), t.shape[1].size, t.index) for t in per_token]
        # The shared rings, each one cp.async group a row.
        rings = [ring for _, ring, _, _ in side_rings] if x_in_registers else ["x_ring"] + [ring for _, ring, _, _ in side_rings]
        threads, vector, chunks = (rendered(e) for e in (self.layout.row_threads, self.layout.vector, self.layout.chunks))

        def row_copy(token: str, slot: str) -> list[str]:
            """X's row into its ring slot: one TileLang copy where the row splits evenly into every thread's
            vectors; else each thread copies the vectors it will read back (row_thread's), the padding's
            masked, and commits them as the one group an even copy makes (schedule._check_ring_copy_width)."""
            if x_in_registers:
                return []
            if not self.layout.pads_columns:
                return [f"T.async_copy(X[{token}, 0:{HIDDEN}], x_ring[{slot}, 0:{HIDDEN}])"]
            return [
                f"for v in T.serial({chunks}):",
                f"    ring_column = (v * {threads} + T.get_thread_binding()) * {vector}",
                f"    if ring_column < {HIDDEN}:",
                f'        T.ptx_cp_async(T.access_ptr(x_ring[{slot}, ring_column], "w", {vector}), '
                f'T.access_ptr(X[{token}, ring_column], "r", {vector}), {vector})',
                "T.ptx_commit_group()",
            ]

        def fetch(token: str, slot: str, guarded: bool) -> list[str]:
            copies = row_copy(token, slot) + [
                f"T.async_copy({param}[{f'{index}[{token}]' if index else token}, 0:{rendered(width)}], {ring}[{slot}, 0:{rendered(width)}])"
                for param, ring, width, index in side_rings
            ]
            if not guarded or not copies:
                return copies
            empty = ["T.ptx_commit_group()"] * len(rings)
            return [f"if {token} < {self.tokens}:", *indent(copies, 4), "else:", *indent(empty, 4)]

        ahead, grid = slots - 1, STREAM_GRID
        source = "x_next[j]" if x_in_registers else "x_ring[slot, j]"
        load = f'T.cast({source}, "float32")' if x_in_registers else source
        if self.layout.pads_columns:
            load = f'T.if_then_else(j < {HIDDEN}, T.cast({source}, "float32"), 0.0)'
        read_row = [self.loop(("j", self.columns)), f"    row[{self.at('j')}] = {load}"]
        fetch_ahead = fetch(f"token + {ahead} * {grid}", f"(step + {ahead}) % {slots}", guarded=True)
        wait = [f"T.ptx_wait_group({ahead * len(rings)})"] if rings else []
        if x_in_registers:
            prologue = [self.alloc("x_next"), self.pin_row_layout("x_next"), "T.copy(X[block, 0], x_next)"]
            # The row leaves x_next before the next row's load is issued into it; that load is in flight
            # through this row's reductions and is waited for where the next step reads it.
            step = [*read_row, f"if token + {grid} < {self.tokens}:", f"    T.copy(X[token + {grid}, 0], x_next)", *fetch_ahead, *wait]
        else:
            prologue = []
            step = [*fetch_ahead, *wait, *read_row]
        return [
            # The launch bound lets ptxas keep blocks_per_sm blocks resident, as the grid assumes.
            f"T.annotate_min_blocks_per_sm({rendered(blocks_per_sm)})",
            *prologue,
            *(self.alloc(ring) for ring in rings),
            # The block's first row exists (the grid is never larger than the token count).
            *fetch("block", "0", guarded=False),
            *(line for k in range(1, ahead) for line in fetch(f"block + {k} * {grid}", str(k), guarded=True)),
            f"for step in T.serial(T.ceildiv({self.tokens} - block, {grid})):",
            f"    token = block + step * {grid}",
            *([f"    slot = step % {slots}"] if rings else []),
            *indent(step, 4),
        ]

    @property
    def rows_may_overhang(self) -> bool:
        """Only a block of several rows can run past the last token; one row per block never does."""
        return self.layout.block_m > 1

    @staticmethod
    def float_with_offset(value: str, offset: float) -> str:
        return f'(T.cast({value}, "float32") + {literal(offset)})'

    def column_param(self, tensor: Tensor, col: str = "j") -> str:
        """A per-column parameter (weight, bias) at row column `col`, zero on columns without a value
        (padding, outside a norm's range), float32 where it is guarded, with its offset (Tensor.offset),
        which a staged copy already holds."""
        load, valid = self._column_load(tensor, col)
        direct = f'T.if_then_else({valid}, T.cast({load}, "float32"), 0.0)' if valid else load
        if tensor.offset:
            direct = self.float_with_offset(direct, tensor.offset)
        return self._read(f"{staged_buffer(tensor.param)}[{col}]", direct)

    def row_param(self, param: str, col: str, i: str = "i", index: str | None = None) -> str:
        """A per-token parameter (cos, sin), or the row of table `param` at the token's `index` value;
        rows past the last token read nothing."""
        staged = f"{staged_buffer(param)}[{f'slot, {col}' if self.streamed else self.at(col)}]"
        return self._read(staged, self._row_load(param, col, i, index))

    def _read(self, staged: str, direct: str) -> str:
        """A side input's value: its staged copy when prefetched, else read from the input where used."""
        if self.prefetch_parameter:
            return f"({staged} if prefetch else {direct})"
        return staged if self.prefetch else direct

    def _row_load(self, param: str, col: str, i: str, index: str | None = None) -> str:
        row = f"{index}[{self.token(i)}]" if index else self.token(i)
        load = f"{param}[{row}, {col}]"
        if self.rows_may_overhang:
            return f"T.if_then_else({self.token(i)} < {self.tokens}, {load}, 0.0)"
        return load

    def store_per_head(self, param: str, fragment: str, heads: int) -> list[str]:
        """Writes one float per row and head (a per-head rstd) from a per-row fragment of padded heads,
        `heads` of them the block's own; the padding's heads and rows past the last token are not stored."""
        padded_heads = self.planned(fragment).shape[-1]
        conditions = self._row_exists() + ([f"h < {rendered(heads)}"] if padded_heads > heads else [])
        return [
            self.loop(("h", rendered(padded_heads))),
            *indent(guarded(conditions, f"{param}[{self.token()}, {self.in_part('h', heads)}] = {fragment}[{self.at('h')}]"), 4),
        ]

    def store_columns_staged(self, fragment: str, staged: str, param: str, per_part: int) -> list[str]:
        """Stores a per-row fragment of `per_part` entries a row into a column-major (tokens, N) output
        through `staged` (per_part, block_m) in shared memory: the block's rows of one column are adjacent
        in the output, and stored from registers each row's thread would write one entry a column, a
        partial sector each; from shared memory consecutive lanes write a column's rows, a run of block_m.
        The padding's entries and rows past the last token are not stored."""
        padded = self.planned(fragment).shape[-1]
        pads = [f"k < {rendered(per_part)}"] if padded > per_part else []
        return [
            self.loop(("k", rendered(padded))),
            *indent(guarded(pads, f"{staged}[k, i] = {fragment}[i, k]"), 4),
            f"for k, i in T.Parallel({rendered(per_part)}, {self.bm}):",
            *indent(guarded(self._row_exists(), f"{param}[{self.token()}, {self.in_part('k', per_part)}] = {staged}[k, i]"), 4),
        ]

    def store_per_row(self, param: str, fragment: str, trailing_index: str = "") -> list[str]:
        """Writes one float per row (mean, rstd, a per-token scale) from a per-row fragment. One row's value
        is copied out: T.copy has one thread store it, where a bare store would have every thread write
        it (the same value, 128 or more writes), and under an `if` on the thread TileLang's layout
        inference gives the fragment to that thread alone, in conflict with its other uses."""
        if self.one_row:
            return [f"T.copy({fragment}, {param}[{self.token()}{trailing_index}])"]
        store = f"{param}[{self.token()}{trailing_index}] = {fragment}[i]"
        return [f"for i in T.Parallel({self.bm}):", *indent(guarded(self._row_exists(), store), 4)]

    def _row_exists(self) -> list[str]:
        """The condition that block row i is a token, where a block's rows may run past the last."""
        return [f"{self.token()} < {self.tokens}"] if self.rows_may_overhang else []


def guarded(conditions: list[str], statement: str) -> list[str]:
    """`statement` under `if` for the conditions that apply (none: unguarded)."""
    if not conditions:
        return [statement]
    return [f"if {' and '.join(conditions)}:", f"    {statement}"]


def shape_source(dims) -> str:
    """A buffer shape as kernel source: each extent by its symbol (model.rendered), a 1-tuple with its comma."""
    rendered_dims = [rendered(d) for d in dims]
    return "(" + ", ".join(rendered_dims) + ("," if len(rendered_dims) == 1 else "") + ")"


def indent(lines: list[str], spaces: int) -> list[str]:
    pad = " " * spaces
    return [pad + line if line else line for line in lines]


def all_of(conditions: list[str]) -> str:
    """The conjunction of TileLang conditions (T.And takes two)."""
    first, *rest = conditions
    return f"T.And({first}, {all_of(rest)})" if rest else first
