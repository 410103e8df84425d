"""The op registry and the contract every op meets.

Each op is one module holding everything about it: its spec model and cross-field checks, its place in
the chain, its plan stage, TileLang fragment and torch reference, its float64 oracle step, how its
inputs are sampled, how its outputs are compared, the CUDA checks of its fragment, how it shrinks for
the small test variant, and its README row. The module defines a subclass of `Op` and registers one
instance; nothing outside fusegen/ops/ names an op kind or an op's output."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from pydantic import Field

from ..codegen import HEAD_DIM
from ..model import Constant, Layout, Schedule, Scratch, Stage, row_shape
from ..strict import Strict

if TYPE_CHECKING:
    import torch

    from ..codegen import KernelFrame
    from ..cuda_checks import Check

# 2^-126: below it a float32 is subnormal, which the GPU's fast math flushes to 0. A spec constant that
# an all-zero row reaches unchanged (eps under rsqrt, amax_floor as a scale under a reciprocal) must be
# at least this once rounded to float32, or the row's outputs are 0 · inf = NaN. A float64 bound at an
# exact float32 value holds after rounding too: rounding to nearest is monotonic.
FLOAT32_MIN_NORMAL = 2.0**-126


@dataclass(frozen=True)
class Place:
    """Where an op may sit in a chain: ops run in increasing `order`, at most one per place. Normalising,
    then rotating the normalised value, then quantising is the only order in which each stage's input is
    what the next expects (quantised values cannot be normalised or rotated). The orders are spaced so
    that a new place (an op before the norm) fits between them without renumbering.

    An op whose output is the same kind of value as its input (a row scaled by constants is still a
    normalised row) may run at any order from `order` to `last`: the chain then places it at the first
    order after the op before it (`between`)."""

    order: int
    role: str  # what the ops of this place do, for messages naming several kinds
    last: int | None = None  # the latest order an op of this place may run at; None: `order` only

    @property
    def latest(self) -> int:
        return self.order if self.last is None else self.last


def between(after: Place, before: Place, role: str) -> Place:
    """A place spanning every order after `after` and before `before`."""
    return Place(after.order + 1, role, before.order - 1)


RESIDUAL_ADD = Place(10, "residual add")
NORMALIZE = Place(20, "normalization")
ROTATE = Place(30, "rotation")
QUANTIZE = Place(40, "quantisation")


def head_dim_constant(head_dim: int) -> Constant:
    """HEAD_DIM, bound by every stage that works per head (one binding in the kernel module)."""
    return Constant(HEAD_DIM, head_dim, "columns per head: the row is heads × HEAD_DIM")


def described(text: str) -> dict:
    """`Field(json_schema_extra=described(...))`: what a key means, for `fusegen schema` and the editors
    that read it. Not `Field(description=...)`: spec.py's errors quote a description as what is allowed."""
    return {"description": text}


def added_key(default: Any) -> dict:
    """`Field(**added_key(default), ...)` for a spec key (an op's, or an [outputs] flag) added after kernels
    were built and tuned: at its default it is left out of the canonical spec (plan.json's spec, the
    identity hash, tuning.json's problem key), so every spec that does not use it keeps its identity, its
    generated files and its tuned winners. Read it back through the spec model, which fills the default in."""
    return {"default": default, "exclude_if": lambda value: value == default}


def kind_field(kind: str):
    # The order is read when the schema is written: every op has registered by then.
    def describe(schema: dict) -> None:
        schema["description"] = f"The op: {kind}. Ops run in the order {chain_order()}, each at most once."

    return Field(json_schema_extra=describe)


class OpSpec(Strict):
    """Base of every op's spec model: unknown keys are errors, values are checked strictly."""


@dataclass(frozen=True)
class ChainContext:
    """What an op sees of the rest of the spec when it plans and validates itself."""

    dtype: str
    hidden: int
    outputs: Mapping[str, bool]  # output flag -> requested
    layout: Layout | None = None  # how a block covers its rows; None while the spec is only validated
    head_dim: int | None = None  # the row is heads × head_dim (the spec's top-level key), or one row
    tokens: int | None = None  # the pinned token count (the spec's `tokens`), or None for a dynamic one

    @property
    def heads(self) -> int:
        return self.hidden // self.head_dim if self.head_dim else 1

    @property
    def block_m(self) -> int:
        return self.layout.block_m if self.layout else 1

    @property
    def padded_hidden(self) -> int:
        return self.layout.padded_hidden if self.layout else self.hidden

    @property
    def block_hidden(self) -> int:
        """The columns a block holds of a row: all of them, or one part's of a split row (model.Layout.hidden)."""
        return self.layout.hidden if self.layout else self.hidden

    def rows(self, *dims: int) -> tuple[int, ...]:
        """A per-row buffer's shape (model.row_shape)."""
        return row_shape(self.block_m, *dims)


class Tolerance(Protocol):
    """How one output of a kernel run is judged against the reference's, and why that is tight enough."""

    reason: str

    def check(
        self,
        name: str,
        got: Mapping[str, torch.Tensor],
        want: Mapping[str, torch.Tensor],
        dtype: str,
        oracle_rows: Callable[[torch.Tensor], Mapping[str, torch.Tensor]] | None,
    ) -> None:
        """Raises AssertionError naming `name` where got[name] is too far from want[name]. `dtype`: the
        activation dtype; `oracle_rows`: rows -> the float64 oracle's outputs of those rows, where known."""
        ...


@dataclass(frozen=True)
class OutputDecl:
    """An output an op may write: `flag` is the [outputs] key that asks for it (None: written whenever the
    op is in the chain), `doc` says what it is (the key's description), `tolerance` how it is compared.
    `default`: what the flag means when the spec leaves it out and the op is in the chain (the updated
    residual stream is what a residual add is for, so it leaves unless turned off)."""

    arg: str
    flag: str | None
    doc: str
    tolerance: Tolerance
    fp8: bool = False  # an fp8 tensor: what "fp8" means to a user who types it as an activation dtype
    default: bool = False


class Draw(Protocol):
    """Fresh random tensors from one seeded generator (float32 unless said otherwise, on the CPU)."""

    def normal(self, shape: tuple[int, ...]) -> torch.Tensor: ...

    def uniform(self, shape: tuple[int, ...]) -> torch.Tensor: ...

    def integers(self, high: int, shape: tuple[int, ...]) -> torch.Tensor:
        """int64 values uniform in [0, high)."""
        ...


# (stage, frame, activation dtype, whether the kernel writes Y) -> lines
WholeKernel = Callable[[Stage, "KernelFrame", str, bool], list[str]]


@dataclass(frozen=True)
class JointReduction:
    """An op's row reduction split around a shared exchange, so that the norm's sum of squares and the
    quantiser's per-token amax cross the warps together: one barrier per row instead of two.

    It rests on the norm's per-row factor (rstd) commuting with every op between the two: the norm
    hands on x·w, the ops between are linear in the row, the amax is taken of the unscaled row, and the
    factor is applied after the exchange. max_j fl(rstd·|r_j|) = fl(rstd·max_j |r_j|) because rounding
    is monotonic, so the scale is exactly the amax of the values quantised.

    `provides_factor`: this op's reduction yields the per-row factor (the norm, which opens the joint
    span); otherwise the op closes it, consuming the factor. `when` qualifies the closing op in
    messages (the instances that can take part)."""

    provides_factor: bool
    applies: Callable[[Stage], bool]  # this instance of the op can take part
    partial: tuple[str, str, str]  # (name, reduce op, result fragment) for KernelFrame.exchange
    emit_partial: Callable[[Stage, KernelFrame], list[str]]  # lines before the exchange
    emit_finish: Callable[[Stage, KernelFrame, str], list[str]]  # lines after it, given the factor's fragment
    when: str = ""


S = TypeVar("S", bound=OpSpec)


class Op(ABC, Generic[S]):
    """One kind of op. A subclass sets the class attributes and implements the abstract methods; the
    others have defaults that suit an op without that feature."""

    kind: ClassVar[str]
    spec: ClassVar[type[OpSpec]]
    place: ClassVar[Place]
    transforms_row: ClassVar[bool]  # writes a new row value rather than side outputs only
    outputs: ClassVar[tuple[OutputDecl, ...]] = ()
    # The output holding exactly the row this op hands on: run alone, the op writes the row once, under
    # this name, and the next op reads it (the ledger's unfused chain).
    row_output: ClassVar[str | None] = None
    # Inputs the prologue stages next to the row when prefetching. False: the op's fragment reads its
    # inputs itself, in the row's layout (a second row, which staging would only copy once more).
    staged_inputs: ClassVar[bool] = True
    linear: ClassVar[bool] = False  # commutes with scaling the row by a per-row factor (may sit inside a joint reduction)
    joint: ClassVar[JointReduction | None] = None
    whole_kernel_variants: ClassVar[Mapping[str, WholeKernel]] = {}
    # Names a program factory derives from its parameters for the op's fragments (name -> source, as
    # codegen.DERIVED_EXTENTS: {row_threads} is one block row's threads), each after those it uses.
    derived_extents: ClassVar[Mapping[str, str]] = {}
    readme_keys: ClassVar[str]  # the README's Ops table row: the keys and what they allow

    def check(self, op: S, ctx: ChainContext) -> list[tuple[str, str]]:
        """Cross-field rules: (key, message) per problem."""
        return []

    @abstractmethod
    def plan(self, op: S, index: int, ctx: ChainContext) -> Stage: ...

    @abstractmethod
    def emit_kernel(self, stage: Stage, frame: KernelFrame) -> list[str]: ...

    @abstractmethod
    def emit_reference(self, stage: Stage, hidden: int) -> list[str]: ...

    def variant_scratch(self, variant: str, stage: Stage, layout: Layout, dtype: str) -> tuple[Scratch, ...]:
        """The buffers of a whole-kernel variant (naive, splitk) beyond the stage's own scratch."""
        return ()

    def columns_multiple_of(self, op: S, ctx: ChainContext) -> int:
        """The padded row must be a multiple of this."""
        return 1

    def pads_to_whole_heads(self, op: S, ctx: ChainContext) -> bool:
        """Whether the op pads the row to whole heads of the top-level head_dim (its columns_multiple_of): where
        no layout holds that padding, the planner's error names head_dim."""
        return False

    def needs_whole_row(self, op: S, ctx: ChainContext) -> str | None:
        """What of this op needs every column of a row in one block, in words that follow the op's kind in
        an error ("normalises over the whole row"); None where a block holding one part of the row runs it
        on the part's columns alone (schedule.row_split: contiguous columns, whole heads, whole multiples of
        columns_multiple_of)."""
        return None

    def row_only_keys(self, op: S) -> tuple[str, ...]:
        """The keys set on this op whose inputs act only on the row it hands on, not on the outputs it writes of
        its own (a norm's weight and bias come after its mean and rstd): where that row reaches no output, the
        kernel takes those inputs for nothing (spec.unread_row_keys)."""
        return ()

    def sector_rows(self, op: S, ctx: ChainContext) -> tuple[int, str] | None:
        """(rows, why) where an output of this op is column-major in short runs per row: consecutive rows'
        values are adjacent, so one row stores each run as part of a sector, and a block of `rows` rows,
        staging them, fills it (schedule.sector_rows); None where one row a block stores whole sectors."""
        return None

    def shares_one_vector_rows(self, op: S, ctx: ChainContext) -> str | None:
        """Why a row of one warp's 16-byte vectors should share a warp with the block's other rows on the route of
        many tokens where this op is in the chain (schedule.ONE_VECTOR_ROW_BYTES), for plan.json's reasons; None
        where a warp of its own serves it as well."""
        return None

    def tile_rule(self, op: S, ctx: ChainContext, tile_columns: int) -> str | None:
        """Why this op cannot run on a row read in tiles of `tile_columns` contiguous columns (variant
        reread: emit_statistics's passes, then emit_tile on one tile at a time), in words that follow the op's
        kind in an error; None where it can. An op that works on any part of a row (needs_whole_row None)
        runs on tiles that are whole multiples of its columns_multiple_of."""
        whole = self.needs_whole_row(op, ctx)
        if whole is not None:
            return whole
        multiple = self.columns_multiple_of(op, ctx)
        return None if tile_columns % multiple == 0 else f"works on whole runs of {multiple} columns, which a tile of {tile_columns} splits"

    def row_statistic_passes(self, op: S, ctx: ChainContext) -> int:
        """How many passes over a row read in tiles the op's statistics of the whole row take before it can
        finish any column (emit_statistics): 0 where it has none (a norm over each head has its own per tile)."""
        return 0

    def emit_statistics(self, stage: Stage, frame: KernelFrame) -> list[str]:
        """Variant reread: the passes over the row's tiles (`for tile in T.unroll(tiles)`, each loading the
        tile into `row`) that compute what this stage needs of the whole row, before any tile is finished."""
        return []

    def emit_tile(self, stage: Stage, frame: KernelFrame) -> list[str]:
        """Variant reread: the stage on one tile of the row (`frame.tiled`; its whole-row statistics from
        emit_statistics): where it needs none, its fragment on the tile's columns."""
        return self.emit_kernel(stage, frame)

    def layout_refusal(self, op: S, ctx: ChainContext, vector: int, threads: int) -> str | None:
        """Why the op's fragment does not take this row layout (`threads`: those of one block row, `vector`
        elements a vector), for plan.json's reasons; None where it does."""
        return None

    def meets_in_shared_memory(self, stage: Stage) -> bool:
        """Whether the stage's threads exchange values through shared memory behind a barrier besides its
        reductions' partials (the planner orders staged side inputs' reads by the row's first barrier)."""
        return False

    def crowds_few_warps(self, stage: Stage) -> bool:
        """Whether this stage, planned on a row layout of many values a thread, runs slower there than
        on the planner's wider blocks (schedule.gathering_row asks before it moves a row to four warps)."""
        return False

    def bound_eases_few_warps(self, stage: Stage) -> bool:
        """Whether what crowds a few warps in this stage (crowds_few_warps) is registers alone, which a
        launch bound squeezes without a loss (schedule.gathering_row then bounds the four warps)."""
        return False

    def offers_variant(self, op: S, variant: str) -> bool:
        """Whether this instance of the op runs as the whole-kernel `variant` (whole_kernel_variants)."""
        return variant in self.whole_kernel_variants

    @abstractmethod
    def oracle_step(
        self, v: torch.Tensor, op: dict[str, Any], inputs: Mapping[str, torch.Tensor], head_dim: int | None
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The float64 oracle (oracle.py): the README's formula for this op (Numerics), written with
        explicit index arithmetic, not the reference's tensor idioms. `op`: the op's validated spec as
        JSON data; `head_dim`: the spec's. Returns the row handed on and the op's outputs (with anything
        a tolerance needs)."""

    def sample_inputs(self, op: dict[str, Any], shapes: Mapping[str, tuple[int, ...]], draw: Draw) -> dict[str, torch.Tensor]:
        """Fresh float32 values of this op's inputs (`shapes`: of every kernel input, by name)."""
        return {}

    def cuda_checks(self, stage: Stage, source: str, schedule: Schedule) -> list[Check]:
        """What the CUDA compiled from this op's fragment must show (cuda_checks.py has the generic ones)."""
        return []

    def small_variant(self, op: dict[str, Any], small: ChainContext, full: ChainContext) -> dict[str, Any]:
        """The op's spec for the seed's small shape (`small`: its hidden and head_dim; `full`: the spec's)."""
        return op


REGISTRY: dict[str, Op[Any]] = {}


def register(op: Op[Any]) -> Op[Any]:
    REGISTRY[op.kind] = op
    return op


def places() -> list[tuple[Place, list[str]]]:
    """Each place with the kinds registered there, in chain order."""
    by_place: dict[Place, list[str]] = {}
    for op in REGISTRY.values():
        by_place.setdefault(op.place, []).append(op.kind)
    return sorted(by_place.items(), key=lambda item: item[0].order)


def chain_order() -> str:
    """The order in words: `normalization (rmsnorm | layernorm) → rope → quant_fp8`, then where each op
    of a span of places may run (`, K anywhere after normalization and before quant_fp8`)."""
    fixed = [(place, kinds) for place, kinds in places() if place.last is None]
    order = " → ".join(_named(place, kinds) for place, kinds in fixed)
    for span, kinds in places():
        if span.last is not None:
            after = [f"after {_named(place, kinds, briefly=True)}" for place, kinds in fixed if place.order < span.order][-1:]
            before = [f"before {_named(place, kinds, briefly=True)}" for place, kinds in fixed if place.order > span.latest][:1]
            order += ", " + " ".join([_named(span, kinds), "anywhere", " and ".join(after + before)]).rstrip()
    return order


def _named(place: Place, kinds: list[str], briefly: bool = False) -> str:
    """A place in messages: its kind, or its role (with its kinds unless `briefly`) where it has several."""
    if len(kinds) == 1:
        return kinds[0]
    return place.role if briefly else f"{place.role} ({' | '.join(kinds)})"


def misplaced(kinds: Sequence[str]) -> tuple[int, str] | None:
    """The first op of a chain that cannot run where it stands, as (its position, the earlier kind it
    cannot follow); None where every op can. The ops run at increasing orders, each at an order of its
    place and each kind at most once; an op of a span of places takes the first order after the op before
    it, which leaves the most room for the ops after it."""
    placed: list[tuple[str, int]] = []  # (kind, the order it runs at) of each op so far
    for index, kind in enumerate(kinds):
        place = REGISTRY[kind].place
        order = max(place.order, placed[-1][1] + 1) if placed else place.order
        if order > place.latest or any(earlier == kind for earlier, _ in placed):
            return index, next(earlier for earlier, at in placed if at >= place.latest or earlier == kind)
        placed.append((kind, order))
    return None


def output_flags() -> dict[str, OutputDecl]:
    """Every [outputs] key an op declares, by name (ops may share one: both norms write rstd)."""
    flags: dict[str, OutputDecl] = {}
    for op in REGISTRY.values():
        for out in op.outputs:
            if out.flag is not None:
                flags.setdefault(out.flag, out)
    return dict(sorted(flags.items()))


def output_decl(arg: str) -> OutputDecl | None:
    return next((out for op in REGISTRY.values() for out in op.outputs if out.arg == arg), None)


def joint_chain() -> str:
    """The chains a joint reduction serves, in words: `rmsnorm → [rope] → per-token quant_fp8`."""
    opens = [op.kind for op in REGISTRY.values() if op.joint and op.joint.provides_factor]
    closes = [f"{op.joint.when} {op.kind}".strip() for op in REGISTRY.values() if op.joint and not op.joint.provides_factor]
    between = [op.kind for op in REGISTRY.values() if op.linear]
    return f"{' | '.join(opens)} → [{' | '.join(between)}] → {' | '.join(closes)}"


from . import add_residual, layernorm, quant_fp8, rescale, rmsnorm, rope  # noqa: E402,F401  (each registers itself)
