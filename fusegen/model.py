"""Plan data: plain frozen dataclasses, printable as JSON. No TileLang, no text generation here."""

from __future__ import annotations

from dataclasses import dataclass, field

# Bytes per element of every dtype a kernel reads or writes.
DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float8_e4m3fn": 1, "float8_e5m2": 1, "int64": 8}
TORCH_DTYPE = {
    "float16": "torch.float16",
    "bfloat16": "torch.bfloat16",
    "float32": "torch.float32",
    "float8_e4m3fn": "torch.float8_e4m3fn",
    "float8_e5m2": "torch.float8_e5m2",
    "int64": "torch.int64",
}


@dataclass(frozen=True)
class Dim:
    """A tensor extent: a number, or the dynamic token count `m`, or `m` times a number of columns. The
    number may be an Extent: the kernel then writes it by the module constant it derives from."""

    tokens: bool = False
    size: int = 1

    def render(self, m: str) -> str:
        if self.tokens:
            return m if self.size == 1 else f"{m} * {rendered(self.size)}"
        return rendered(self.size)


# Column-major (M, n) outputs pad the token dimension to a whole number of 16-byte units, so that each
# column starts 16-byte aligned: the layout DeepGEMM's FP8 GEMMs read scales in with TMA
# (get_tma_aligned_size: align(M, 16 / element size); 4 float32 tokens).
TMA_ALIGNMENT_BYTES = 16
WARP_LANES = 32


def tokens_per_tma_unit(element_bytes: int) -> int:
    return TMA_ALIGNMENT_BYTES // element_bytes


def padded_tokens(tokens, element_bytes: int):
    """The token dimension of a column-major tensor padded to TMA_ALIGNMENT_BYTES (an int, or a torch
    SymInt while tracing)."""
    unit = tokens_per_tma_unit(element_bytes)
    return (tokens + unit - 1) // unit * unit


@dataclass(frozen=True)
class Tensor:
    """A kernel argument in global memory."""

    param: str  # name in the TileLang signature (CamelCase)
    arg: str  # name in the Python call (snake_case)
    dtype: str
    shape: tuple[Dim, ...]
    role: str  # "input" | "output"
    doc: str
    # "row": contiguous. "column": an (M, n) view with strides (1, padded_tokens(M)), the token dimension
    # fastest; the padding tokens are never written (nor counted by the ledger).
    layout: str = "row"
    # Added to every element as it is loaded, in float32 (rmsnorm's weight_offset: Gemma scales by 1 + w).
    offset: float = 0.0
    # A table (rows, width) read at one row per token, the row that the (M,) int64 input of this param
    # names (RoPE's cos_sin_cache at each token's position); None: read whole or per token as shaped.
    index: str | None = None
    # How a per-column input lines up with the row's columns, by the names of the kernel module's
    # constants (model.Constant) that hold the numbers: `period` — it repeats every that many columns,
    # column j reads value j % period (a per-head weight); `columns` — (start, end): it covers the columns
    # [start, end) only, column j reads value j − start (a norm over a column range). Neither: value j.
    period: str | None = None
    columns: tuple[str, str] | None = None
    # The spans of a row that read every value of this input: RoPE's angles rotate one span, or one in
    # each head (schedule.with_prefetch stages a gathered table row only where several spans share it).
    spans: int = 1

    @property
    def per_token_row(self) -> bool:
        """A kernel reads `width` values of this input for each token (a per-token row or a gathered
        table row), staged in shared memory when prefetched; otherwise per-column or an index."""
        return len(self.shape) == 2 and (self.shape[0].tokens or self.index is not None)

    @property
    def per_column(self) -> bool:
        return not self.shape[0].tokens and self.index is None

    def bytes_per_token(self) -> int:
        if self.index is not None:
            # Only the rows the tokens name leave DRAM, however many positions the table holds.
            return self.shape[1].size * DTYPE_BYTES[self.dtype]
        if not any(d.tokens for d in self.shape):
            return 0
        count = 1
        for d in self.shape:
            count *= d.size
        return count * DTYPE_BYTES[self.dtype]

    def fixed_bytes(self) -> int:
        if self.index is not None or any(d.tokens for d in self.shape):
            return 0
        count = 1
        for d in self.shape:
            count *= d.size
        return count * DTYPE_BYTES[self.dtype]


@dataclass(frozen=True)
class Scratch:
    """On-chip storage a kernel allocates: registers (fragment) or shared memory. The planner lists every
    buffer of a program (Route.scratch); the emitters allocate only those, by name."""

    name: str
    scope: str  # "fragment" | "shared" | "local" (a thread's own registers, outside any layout)
    shape: tuple[int, ...]
    dtype: str
    why: str
    owner: str = ""  # "kernel" or the stage that uses it ("op[0] rmsnorm"); set by the planner
    barrier: bool = False  # threads read what other threads wrote here: one barrier per row


def partial_buffers(name: str) -> tuple[str, str]:
    """A row reduction's per-thread partials: (per vector chunk and thread, per thread then per warp)."""
    return f"{name}_lanes", f"{name}_thread"


def staged_buffer(param: str) -> str:
    """The buffer a side input is loaded into next to the row (prefetch)."""
    return f"{param.lower()}_staged"


def exchange_buffer(names: tuple[str, ...]) -> str:
    """The shared array through which the warps' partials of these reductions meet."""
    return "_".join(names) + "_warps"


@dataclass(frozen=True)
class Reduction:
    name: str
    op: str  # sum | max
    source: str
    result: str
    axis: str  # "row" or "group of N columns"
    partials: str | None = None  # crosses the warps: names its partial buffers (partial_buffers) and exchange


class Extent(int):
    """A buffer or loop extent that the plan states as a number (plan.json, `fusegen plan`) and the
    generated kernel writes as `symbol`: a parameter of the program's factory (`threads`, `block_m`),
    a value it derives (`chunks`) or a module constant (`HIDDEN`), so that one factory serves every route
    whose program differs only in these numbers. Arithmetic on it gives a plain int."""

    symbol: str

    def __new__(cls, value: int, symbol: str) -> Extent:
        extent = super().__new__(cls, value)
        extent.symbol = symbol
        return extent

    def __getnewargs__(self) -> tuple[int, str]:
        return int(self), self.symbol


def rendered(extent: int) -> str:
    """An extent as kernel source: its symbol, or the number where it has none."""
    return extent.symbol if isinstance(extent, Extent) else str(extent)


def parts_of(width: int, part: int, part_symbol: str) -> Extent:
    """How many `part`-column pieces (heads, quantisation groups) `width` columns hold, written as the
    width over the constant that names `part` (`columns // GROUP_SIZE`): one factory then serves every
    padded width, and the kernel says what the count is."""
    return Extent(width // part, f"{rendered(width)} // {part_symbol}")


def row_shape(block_m: int, *dims: int) -> tuple[int, ...]:
    """The shape of a buffer with an entry per block row and `dims` more axes. A block of one row has no
    row axis (its program is written in 1-D forms: the same CUDA, no `T.Parallel(1, …)`); a single value
    per row is then (1,)."""
    if block_m > 1:
        return (block_m, *dims)
    return dims or (1,)


# One-warp rows a block from which a row's reductions end in its lanes' shuffles (Layout.reduces_within_lanes).
# Measured on the H200 (perf/probe106, fresh short-row draws at the sweep count, outputs bit-identical): of 36, a
# block of eight one-warp rows (bf16 1000 → column-major g8 scales) 1.35 × faster without the exchange, blocks of
# one or two rows 0.86–1.12 ×, four of 35 slower by 3.4–14 %; held out on the 20 draws of four or eight rows
# a block not timed before, 1.009 × geometric mean, none slower by more than 1.2 %, fp16 1024 → column-major g16
# 1.10 ×.
ONE_WARP_ROWS_SHUFFLED = 4


def reduces_within_lanes(row_threads: int, block_m: int) -> bool:
    """Whether a block of `block_m` rows on `row_threads` threads each ends a row's reductions in its lanes'
    shuffles (Layout.reduces_within_lanes says why)."""
    return row_threads < WARP_LANES or (row_threads == WARP_LANES and block_m >= ONE_WARP_ROWS_SHUFFLED)


@dataclass(frozen=True)
class Layout:
    """How one block covers its rows: everything an op fragment needs to index the row.

    Each row of the block has its own threads, row_threads = threads / block_m of them (whole warps, or
    a power of two below a warp where a warp's 16-byte vectors would overrun the row: rows_share_warps),
    and row i's thread t' (block thread i · row_threads + t') holds `vector` contiguous columns of every
    row_tile = row_threads · vector columns of that row: the padded row is a whole number of row tiles.
    A row's reductions then stay among its own threads, and a thread holds one row's values (its per-row
    statistics and cos/sin once), however many rows the block has.

    With `shared_threads` (Schedule.rows_share_threads) every row lies on all of the block's threads instead:
    row_threads = threads, thread t holds the same columns of every row, row i's after row i − 1's in its
    registers, and a per-column input is one copy for all the rows. A thread then holds block_m rows' values
    and the rows' reductions run side by side, each ending in one exchange for all of them.

    A row split over `parts` blocks (Schedule.row_split) is laid out the same way in each part: `hidden`
    is then a part's width, and the block of part p holds the row's columns from p · hidden on."""

    block_m: int
    hidden: int  # the columns a block holds of each of its rows: the row's, or its part's
    padded_hidden: int
    threads: int
    vector: int  # elements per vector access
    parts: int = 1
    shared_threads: bool = False  # every block row on all the block's threads (Schedule.rows_share_threads)

    @property
    def pads_columns(self) -> bool:
        return self.padded_hidden != self.hidden

    def rows(self, *dims: int) -> tuple[int, ...]:
        return row_shape(self.block_m, *dims)

    @property
    def row_threads(self) -> int:
        """The threads of one block row: all of them where the block has one row or its rows share them."""
        return self.threads if self.block_m == 1 or self.shared_threads else Extent(self.threads // self.block_m, "row_threads")

    @property
    def row_tile(self) -> int:
        return self.row_threads * self.vector

    @property
    def chunks(self) -> Extent:
        """Vectors each thread holds of its row: the row tiles of a padded row."""
        return Extent(self.padded_hidden // self.row_tile, "chunks")

    @property
    def rows_share_warps(self) -> bool:
        """Whether a warp holds several rows, each on a power-of-two group of its lanes: a row's reductions
        then end in shuffles among those lanes, with nothing to exchange across warps."""
        return self.row_threads < WARP_LANES

    @property
    def reduces_within_lanes(self) -> bool:
        """Whether a row's reductions end in shuffles among its lanes, every lane left with the result, with no
        exchange across warps: where rows share warps, and where a block holds ONE_WARP_ROWS_SHUFFLED rows or
        more, each on a warp of its own — there the exchange's barrier held every row of the block at each
        reduction (probe106). A block of one or two one-warp rows keeps the exchange: its barrier holds one or
        two warps, and without it the same programs ran 0.86–1.12 × as fast, no sign that held."""
        return reduces_within_lanes(self.row_threads, self.block_m)

    @property
    def warps(self) -> Extent:
        """The warps of one block row (whole warps: not where rows share warps)."""
        assert not self.rows_share_warps, "rows that share a warp have no warps of their own"
        return Extent(self.row_threads // WARP_LANES, "warps")

    def columns_held(self, row_thread: int) -> list[int]:
        """The columns of its block row that a row thread holds, in register order: one vector of each row
        tile (the inverse of thread_and_index)."""
        return [
            tile * self.row_tile + row_thread * self.vector + lane
            for tile in range(self.padded_hidden // self.row_tile)
            for lane in range(self.vector)
        ]

    def thread_and_index(self, row: int, column: int) -> tuple[int, int]:
        """(block thread, register index) holding a block row's column: the pinned layout that
        codegen.layout_functions writes for TileLang."""
        if self.shared_threads:
            return (
                column // self.vector % self.row_threads,
                row * self.chunks * self.vector + column // self.row_tile * self.vector + column % self.vector,
            )
        return (
            row * self.row_threads + column // self.vector % self.row_threads,
            column // self.row_tile * self.vector + column % self.vector,
        )


# The SM count of the H100 SXM and the H200. A stream kernel's grid is sized from the SMs of the GPU its
# program compiles on (runtime.sm_count); this is the count where none is visible (the build machine,
# whose kernel.cu shows that grid).
HOPPER_SMS = 132
# The kernels take the token count as a signed 32-bit int (`int m`), and grid x counts row blocks in one.
MAX_TOKENS = 2**31 - 1
# Variants whose chain runs on a row held in registers (reread: one tile of it at a time), built from the
# ops' fragments; the others (naive, splitk) are whole-kernel variants of a single op.
ROW_VARIANTS = ("fragment", "stream", "reread")


def writes_activation_row(dtype: str, hidden: int, writes_y: bool, outputs: tuple[Tensor, ...] | list[Tensor]) -> bool:
    """Whether a kernel writing `outputs` writes a full-width row in the activations' dtype (Y, residual_out)
    besides any FP8: such stores keep the memory busy while a row waits at its reductions."""
    return writes_y or any(t.dtype == dtype and t.shape[-1].size == hidden for t in outputs)


@dataclass(frozen=True)
class RowWaits:
    """What a fragment program's row waits on after its load, and what it writes, as its planned route
    says (plan._route; schedule.wide_stream decides from it)."""

    barriers: int  # block-wide exchanges per row
    gathers: int  # side inputs read at a row another input names (RoPE's cache at the positions)
    after_gather: tuple[Reduction, ...]  # the reductions that follow the stage reading a gathered row
    writes_row: bool  # a full-width row in the activations' dtype (Y, residual_out) besides any FP8
    unstaged_rows: int  # per-token rows an op loads itself in the row's layout (add_residual's residual), outside any prologue or ring

    @property
    def reduces_after_gather(self) -> bool:
        return bool(self.after_gather)


@dataclass(frozen=True)
class Schedule:
    variant: str  # fragment | stream | reread | naive | splitk
    block_m: int
    threads: int
    vector_elems: int
    vector_bytes: int
    padded_hidden: int
    elems_per_thread: int
    blk_k: int | None
    prefetch: bool  # side inputs (weight, bias, cos, sin) loaded next to the row, before any reduction
    joint_reduction: bool  # the norm stage and the last stage share one exchange (ops.JointReduction)
    register_estimate: int
    reasons: tuple[str, ...]
    blocks_per_sm: int | None = None  # stream and fragment: resident blocks per SM, the launch bound
    ring_slots: int | None = None  # stream: rows in the shared-memory ring, the current one and those in flight
    ring_in_registers: bool = False  # stream: the next row's x one row ahead in registers, not in the shared ring
    # The most tokens the program counts: fewer than MAX_TOKENS where a stream program's int32 token index runs
    # ahead of its rows (schedule.stream_token_limit)
    most_tokens: int = MAX_TOKENS
    # fragment: the blocks each row is split over, each holding hidden / row_split contiguous columns; the
    # schedule's padded_hidden and elems_per_thread are then a part's.
    row_split: int = 1
    # reread: the tiles the row is read in, each one vector a thread (hidden / (threads · vector) of them):
    # the statistics' passes read every tile, then each tile is read again and finished
    tiles: int = 1
    # reread: the finishing pass unrolled, where nvcc then finishes each tile from the words the statistics
    # pass loaded (the same addresses at constant offsets) instead of reading it again (schedule.REREAD_HELD_TILES)
    tiles_held: bool = False
    # fragment, prefetched: the staged float32 per-column side inputs lose __restrict__, so ptxas keeps their
    # loads next to the row's (schedule.with_pinned_side_inputs)
    pinned_side_inputs: bool = False
    # fragment, block_m > 1: every row of the block on all of its threads (model.Layout.shared_threads)
    rows_share_threads: bool = False

    @property
    def columns_per_thread(self) -> int:
        """The columns a thread holds of the row: its values, or where the block's rows share its threads, one
        row's share of them (a per-column input staged in registers holds this many, once for every row)."""
        return self.elems_per_thread // self.block_m if self.rows_share_threads else self.elems_per_thread

    @property
    def builds_row(self) -> bool:
        return self.variant in ROW_VARIANTS

    def layout(self, hidden: int) -> Layout:
        """The layout, its extents named as the program's factory names them. One row per block stays the
        number 1 (a factory for one row per block indexes the row by `block` alone). split-K's chunk width
        stays a number: its emitter unrolls the chunks by count. A block's width is the module's HIDDEN, or
        with a split row the factory's `part_columns`; a reread row is laid out as one tile of it, a part
        `tile_columns` wide that the program's loops over the tiles move along the row."""
        rows = Extent(self.block_m, "block_m") if self.block_m > 1 else self.block_m
        if self.variant == "reread":
            tile = Extent(hidden // self.tiles, "tile_columns")
            return Layout(
                rows, tile, tile, Extent(self.threads, "threads"), Extent(self.vector_elems, "vector"), Extent(self.tiles, "tiles")
            )
        width = Extent(hidden // self.row_split, "HIDDEN" if self.row_split == 1 else "part_columns")
        if self.variant == "splitk":
            columns = self.blk_k
        else:
            columns = Extent(self.padded_hidden, width.symbol if self.padded_hidden == width else "columns")
        parts = Extent(self.row_split, "row_split")
        return Layout(
            rows, width, columns, Extent(self.threads, "threads"), Extent(self.vector_elems, "vector"), parts, self.rows_share_threads
        )


@dataclass(frozen=True)
class LedgerLine:
    kernel: str  # the op run alone, or "fused"
    tensor: str
    direction: str  # read | write
    bytes_per_token: int
    fixed_bytes: int


@dataclass(frozen=True)
class Ledger:
    """Lower bound on DRAM traffic: every input read once, every output written once."""

    fused: tuple[LedgerLine, ...]
    unfused: tuple[LedgerLine, ...]

    @staticmethod
    def _total(lines, tokens: int) -> int:
        return sum(line.bytes_per_token * tokens + line.fixed_bytes for line in lines)

    def fused_bytes(self, tokens: int) -> int:
        return self._total(self.fused, tokens)

    def unfused_bytes(self, tokens: int) -> int:
        return self._total(self.unfused, tokens)


@dataclass(frozen=True)
class Constant:
    """A value a reader of kernel.py looks for (an eps, the fp8 maximum, the RoPE span's start), bound
    to `name` at the top of the module; the op's fragments refer to it by that name. TileLang folds
    Python constants when it traces a program, so naming one leaves the CUDA as a literal would."""

    name: str  # an upper-case identifier fixed by the op's module, unique in the chain (each op runs once)
    value: int | float  # validated by the spec
    doc: str


@dataclass(frozen=True)
class Stage:
    """One op of the chain as the planner placed it; `params` holds the op's own settings."""

    index: int
    kind: str
    summary: str
    params: dict = field(default_factory=dict)
    inputs: tuple[Tensor, ...] = ()
    outputs: tuple[Tensor, ...] = ()
    scratch: tuple[Scratch, ...] = ()
    reductions: tuple[Reduction, ...] = ()
    decisions: tuple[str, ...] = ()
    constants: tuple[Constant, ...] = ()


@dataclass(frozen=True)
class TokenRange:
    """Token counts first_tokens … last_tokens; last_tokens None: every larger count."""

    first_tokens: int
    last_tokens: int | None

    def serves(self, tokens: int) -> bool:
        return self.first_tokens <= tokens and (self.last_tokens is None or tokens <= self.last_tokens)

    def label(self) -> str:
        return f"{self.first_tokens}+" if self.last_tokens is None else f"{self.first_tokens}–{self.last_tokens}"


@dataclass(frozen=True)
class Route(TokenRange):
    """One compiled program of a kernel: the schedule serving its token range, with the stages and
    scratch planned for it (padding and block_m change their shapes)."""

    schedule: Schedule
    stages: tuple[Stage, ...]
    scratch: tuple[Scratch, ...]  # every buffer the program allocates
    origin: str  # where the schedule came from: the planner's rules or a tuning measurement

    @property
    def barriers_per_row(self) -> int:
        """One per shared buffer whose threads read what others wrote. A stream's row loop may take one more,
        TileLang's own: where no barrier between orders a row's first shared write (the ring's next copy, an
        exchange) after the last row's reads of that memory."""
        return sum(b.barrier for b in self.scratch)

    def buffer(self, name: str) -> Scratch:
        return next(b for b in self.scratch if b.name == name)


@dataclass(frozen=True)
class FragmentOverStream:
    """The route of many tokens planned with wide_stream's stream declined: the fragment program it replaced, as
    variant "fragment" plans it, or on the stream's own `threads` where those differ (None: variant "fragment"'s
    count). `blocks` an SM at `registers` a thread is what ptxas compiled it to, which kept it
    (schedule.fragment_over_stream_blocks); both None while the build compiles it to weigh."""

    blocks: int | None = None
    registers: int | None = None
    threads: int | None = None


@dataclass(frozen=True)
class Plan:
    name: str
    identity: str  # name + content hash: cache key, directory, test id
    spec_file: str
    fusegen_version: str
    dtype: str
    hidden: int
    tokens: int | None
    routes: tuple[Route, ...]  # by token count, ascending; together they serve every count
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    ledger: Ledger
    ledger_tokens: int
    writes_y: bool
    # Y is stored before the stage at this position (len(stages): after the last); None when not written.
    # The kernel, its joint-reduction body and the reference all store it there.
    y_before: int | None
    spec: dict  # the validated spec, canonical JSON form (variants for tests are derived from it)
    # Where `fusegen build` kept the fragment program wide_stream's stream replaced on the route of many tokens
    # (build._fragments_over_streams); None where the planner's rules stand.
    fragment_over_stream: FragmentOverStream | None = None

    @property
    def writes_row(self) -> bool:
        return writes_activation_row(self.dtype, self.hidden, self.writes_y, self.outputs)

    @property
    def primary(self) -> Route:
        """The route serving the most tokens, where bandwidth is decided; describes the kernel."""
        return self.routes[-1]

    @property
    def schedule(self) -> Schedule:
        return self.primary.schedule

    @property
    def stages(self) -> tuple[Stage, ...]:
        return self.primary.stages

    @property
    def layout(self) -> Layout:
        return self.schedule.layout(self.hidden)

    @property
    def most_tokens(self) -> int:
        """The most tokens a call may pass: what the program of the largest counts can count (each earlier
        route's range ends far below its own program's limit)."""
        return self.primary.schedule.most_tokens

    def route_for(self, tokens: int) -> Route:
        return next(r for r in self.routes if r.serves(tokens))

    @property
    def program_of_route(self) -> tuple[int, ...]:
        """The program each route runs: routes with one schedule (not adjacent, or they would have
        merged) share the program of the first of them."""
        distinct: list[Schedule] = []
        numbers = []
        for route in self.routes:
            if route.schedule not in distinct:
                distinct.append(route.schedule)
            numbers.append(distinct.index(route.schedule))
        return tuple(numbers)

    @property
    def programs(self) -> tuple[tuple[Route, ...], ...]:
        """Per program, the routes it serves."""
        numbers = self.program_of_route
        return tuple(tuple(r for r, n in zip(self.routes, numbers) if n == k) for k in range(max(numbers) + 1))
