"""The spec contract: pydantic models for a kernel spec, loading from TOML, and the chain rules.

Every failure becomes one SpecError naming the file, the line where it can be known, the key path
(`op[2].rope_dim`), what was wrong and what is allowed.
"""

from __future__ import annotations

import errno
import keyword
import os
import re
import stat
import tomllib
import unicodedata
from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import Field, ValidationError, create_model

from .errors import ChainError, SpecError, shown
from .locate import line_of
from .model import MAX_TOKENS, Layout
from .ops import REGISTRY, ChainContext, added_key, chain_order, described, joint_chain, misplaced, output_flags
from .strict import Strict

DTYPES = ("float16", "bfloat16", "float32")
# A row lives in registers: 1024 threads × 64 fp32 each is the most one block can hold.
MAX_HIDDEN = 65536
MIN_HIDDEN = 16
# No other name is reserved: the generated module never binds the kernel's name (emit.PRIM_FUNC).
NAME_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
NAME_RULE = "a name of ASCII letters, digits and '_', starting with a letter, at most 64 characters, not a Python keyword"
MAX_SPEC_BYTES = 64 * 1024
# A head is a whole number of 16-byte fp16 vectors, so no vector of the row straddles two heads (every
# model's head is: 64, 80, 96, 128, 192, 256, 576).
HEAD_DIM_MULTIPLE = 8
HEAD_DIM_RULE = f"a multiple of {HEAD_DIM_MULTIPLE} that divides hidden"


# Flags whose default depends on the chain (ops.OutputDecl.default): unset (None) until KernelSpec.requests
# reads the chain.
CHAIN_DEFAULT_FLAGS = frozenset(flag for flag, out in output_flags().items() if out.default)


# Y is the chain's own; every other key is an output an op declares (ops.OutputDecl), off by default
# or defaulting by the chain (CHAIN_DEFAULT_FLAGS).
Outputs = create_model(
    "Outputs",
    __base__=Strict,
    y=(
        bool | None,
        Field(
            default=None,
            json_schema_extra=described("Write Y, the row after the last op that changes it (default: when the chain changes the row)."),
        ),
    ),
    **{
        # Unset, such a flag dumps as before it existed: the identity and the tuning key stay what they were.
        flag: (bool | None, Field(**added_key(None), json_schema_extra=described(out.doc)))
        if flag in CHAIN_DEFAULT_FLAGS
        else (bool, Field(default=False, json_schema_extra=described(out.doc)))
        for flag, out in output_flags().items()
    },
)


AUTO = "'auto' leaves it to the planner, or to tuning.json's winners where it has some."


def _whole_kernel_ops(variant: str) -> str:
    return " or ".join(op.kind for op in REGISTRY.values() if variant in op.whole_kernel_variants)


class ScheduleHints(Strict):
    variant: Literal["auto", "fragment", "stream", "reread", "naive", "splitk"] = Field(
        default="auto",
        json_schema_extra=described(
            "fragment: row in registers, one block per row group; stream: a persistent grid whose blocks loop over rows "
            "through a shared-memory ring (or one row ahead in registers: ring); reread: the row read in tiles, for its norm's sums and again to finish each tile; naive (row in shared memory) and splitk (row in chunks): a chain of one "
            f"{_whole_kernel_ops('naive')}. " + AUTO
        ),
    )
    block_m: Literal["auto"] | int = Field(
        default="auto", json_schema_extra=described("Rows per block: 1, 2, 4, 8 or 16 (stream: 1). " + AUTO)
    )
    threads: Literal["auto"] | int = Field(
        default="auto", json_schema_extra=described("Threads per block: a multiple of 32 from 32 to 1024. " + AUTO)
    )
    blk_k: Literal["auto"] | int = Field(
        default="auto",
        json_schema_extra=described(
            "splitk's chunk width: a multiple of 32 under twice hidden (or up to one warp's 16-byte vectors). " + AUTO
        ),
    )
    prefetch: Literal["auto"] | bool = Field(
        default="auto",
        json_schema_extra=described(
            "Load weight/bias and cos/sin next to the row, before the first reduction (fragment and stream). " + AUTO
        ),
    )
    joint_reduction: Literal["auto"] | bool = Field(
        default="auto",
        json_schema_extra=described(
            f"The norm's sum of squares and a per-token fp8 amax cross the warps in one exchange ({joint_chain()}). " + AUTO
        ),
    )
    blocks_per_sm: Literal["auto"] | int = Field(
        default="auto",
        json_schema_extra=described(
            "stream: resident blocks per SM (the grid is this × the SMs); fragment: the blocks per SM the launch "
            "bound keeps room for in registers (at most 2048 threads per SM). " + AUTO
        ),
    )
    ring_slots: Literal["auto"] | int = Field(
        default="auto",
        json_schema_extra=described(  # variant "stream"
            "stream only: rows a block holds in its ring, 2, 3 or 4, all but one in flight. " + AUTO
        ),
    )
    ring: Literal["auto", "shared", "registers"] = Field(
        **added_key("auto"),
        json_schema_extra=described(
            "stream only: where the next row's x waits while this row is reduced — 'shared': a shared-memory ring "
            "of ring_slots rows filled by cp.async; 'registers': one row ahead in each thread's registers, loaded "
            "before this row's reductions (no barrier for it; per-token side inputs keep a two-slot shared ring). "
            "'auto': shared."
        ),
    )
    rows_share_threads: Literal["auto"] | bool = Field(
        **added_key("auto"),
        json_schema_extra=described(
            "fragment, block_m > 1: every row of the block on all of its threads (each thread holding the same columns of "
            "every row) rather than each row on threads / block_m threads of its own. 'auto': rows on threads of their own."
        ),
    )
    row_split: Literal["auto"] | int = Field(
        **added_key("auto"),
        json_schema_extra=described(
            "fragment, one row per block: the blocks each row is split over, each taking hidden / row_split contiguous "
            "columns, for chains where no op reduces across the whole row (heads, groups and RoPE spans lie inside a part). "
            "'auto': one block per row, except for up to 64 tokens, where the planner splits a row that allows it into parts of at least 3 KB."
        ),
    )


# Union[...] of a tuple built at import time: the `X | Y` form has no spelling for a computed list of types.
OpUnion = Annotated[Union[tuple(op.spec for op in REGISTRY.values())], Field(discriminator="kind")]  # noqa: UP007


class KernelSpec(Strict):
    name: str = Field(
        description=NAME_RULE, json_schema_extra=described(f"The kernel's identity: generated/<name>/ and its function: {NAME_RULE}.")
    )
    dtype: Literal["float16", "bfloat16", "float32"] = Field(json_schema_extra=described("Activations, weight, bias and Y."))
    hidden: int = Field(ge=MIN_HIDDEN, le=MAX_HIDDEN, json_schema_extra=described("The row width N (static)."))
    head_dim: int | None = Field(
        **added_key(None),
        ge=HEAD_DIM_MULTIPLE,
        le=MAX_HIDDEN,
        description=HEAD_DIM_RULE,
        json_schema_extra=described(
            f"The row is heads × head_dim ({HEAD_DIM_RULE}): norms with over = 'head' and RoPE work inside every head."
        ),
    )
    tokens: int | None = Field(
        default=None, ge=1, le=MAX_TOKENS, json_schema_extra=described("Pins the token count M; without it M is dynamic.")
    )
    op: list[OpUnion] = Field(
        min_length=1, json_schema_extra=described(f"The chain: [[op]] tables in the order {chain_order()}, each at most once.")
    )
    outputs: Outputs = Field(default=Outputs(), json_schema_extra=described("Which optional outputs the kernel writes."))
    schedule: ScheduleHints = Field(
        default=ScheduleHints(), json_schema_extra=described("How the kernel is scheduled; every hint defaults to 'auto'.")
    )

    @property
    def writes_y(self) -> bool:
        if self.outputs.y is not None:
            return self.outputs.y
        return any(REGISTRY[op.kind].transforms_row for op in self.op)

    def requests(self, flag: str) -> bool:
        """Whether [outputs] `flag` is on: as set, else its declaration's default where an op of the chain
        declares it."""
        value = getattr(self.outputs, flag)
        if value is not None:
            return value
        return any(out.flag == flag and out.default for op in self.op for out in REGISTRY[op.kind].outputs)

    def writes(self, out) -> bool:
        """Whether the kernel writes an op's declared output (ops.OutputDecl): one without a flag whenever its op
        is in the chain, another where its flag is on."""
        return out.flag is None or self.requests(out.flag)


def check_name(name: str) -> None:
    """The name becomes a directory, a Python package and the CUDA kernel's name: only a plain identifier
    is safe as all three."""
    if NAME_PATTERN.fullmatch(name) and not keyword.iskeyword(name) and not keyword.issoftkeyword(name):
        return
    raise ChainError("name", f"{_name_problem(name)}; it must be {NAME_RULE}")


def _name_problem(name: str) -> str:
    if not name:
        return "is empty"
    if len(name) > 64:
        return f"is {len(name)} characters long"
    foreign = next((c for c in name if not c.isascii()), None)
    if foreign:
        # Say which character: a look-alike (Cyrillic 'а' for 'a') is invisible in the quoted name.
        what = unicodedata.name(foreign, "an unnamed character")
        return f"{shown(name)} contains {shown(foreign)} ({what}), which is not ASCII"
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        return f"{shown(name)} is a Python keyword"
    if not name[0].isalpha():
        return f"{shown(name)} starts with {shown(name[0])}"
    bad = next(c for c in name if not (c.isalnum() or c == "_"))
    return f"{shown(name)} contains {shown(bad)}"


def check_chain(spec: KernelSpec) -> None:
    """Cross-field rules pydantic cannot express per field."""
    check_name(spec.name)
    if spec.head_dim is not None and (spec.head_dim % HEAD_DIM_MULTIPLE or spec.hidden % spec.head_dim):
        raise ChainError("head_dim", f"must be {HEAD_DIM_RULE} = {spec.hidden}, got {spec.head_dim}")
    if wrong := misplaced([op.kind for op in spec.op]):
        index, previous = wrong
        raise ChainError(
            f"op[{index}].kind",
            f"'{spec.op[index].kind}' cannot follow '{previous}': ops run in the order {chain_order()}, each at most once",
        )
    context = chain_context(spec)
    for index, op in enumerate(spec.op):
        for key, message in REGISTRY[op.kind].check(op, context):
            raise ChainError(f"op[{index}].{key}", message)
    check_outputs(spec)


def check_outputs(spec: KernelSpec) -> None:
    if spec.outputs.y and not any(REGISTRY[op.kind].transforms_row for op in spec.op):
        first = spec.op[0].kind
        raise ChainError("outputs.y", f"no op changes the row before {first}, so Y would be a copy of x; set y = false")
    declared = {out.flag for op in spec.op for out in REGISTRY[op.kind].outputs}
    for flag in output_flags():
        if getattr(spec.outputs, flag) and flag not in declared:
            makers = sorted(op.kind for op in REGISTRY.values() if any(out.flag == flag for out in op.outputs))
            raise ChainError(f"outputs.{flag}", f"no op in this chain produces {flag}; it needs one of: {', '.join(makers)}")
    # An output without a flag is written whenever its op is in the chain.
    written = [out for op in spec.op for out in REGISTRY[op.kind].outputs if spec.writes(out)]
    if not (spec.writes_y or written):
        raise ChainError("outputs.y", "the kernel would write nothing: keep y = true or add an output")


def repeated_by_y(spec: KernelSpec) -> str | None:
    """The output Y repeats bit for bit, where the spec writes both: Y is the row the last op that changes it
    hands on, and where that op writes exactly that row under a name of its own (row_output: a residual add's
    rounded sum, residual_out), the two are one row stored twice. Not an error, since a caller may want two
    tensors, but a row of bytes a token the build points out."""
    if not spec.writes_y:
        return None
    last = next((REGISTRY[op.kind] for op in reversed(spec.op) if REGISTRY[op.kind].transforms_row), None)
    declared = next((out for out in last.outputs if out.arg == last.row_output), None) if last else None
    if declared is None or not spec.writes(declared):
        return None
    return declared.arg


def _last_writing_op(spec: KernelSpec) -> int:
    """The index of the last op that writes an output of its own (each op before it hands that op its row)."""
    writes = [any(spec.writes(out) for out in REGISTRY[op.kind].outputs) for op in spec.op]
    return max((index for index, written in enumerate(writes) if written), default=len(spec.op) - 1)


def unobserved_ops(spec: KernelSpec) -> list[int]:
    """The indices of ops whose work reaches no output: where Y is not written, those after the last op that
    writes an output of its own. The kernel computes them for nothing (and reads their inputs: a RoPE's cos/sin),
    where torch.compile drops them from its graph; valid, since the kernel's inputs stay what the spec says, but
    the build points them out."""
    if spec.writes_y:
        return []
    return list(range(_last_writing_op(spec) + 1, len(spec.op)))


def unread_row_keys(spec: KernelSpec) -> tuple[int, tuple[str, ...]] | None:
    """(index, keys) where Y is not written and the last op writing an output of its own writes only what comes
    before its row-only keys act (ops.Op.row_only_keys: a norm's mean and rstd, before its weight and bias): the
    kernel takes those inputs, and no output depends on them (a fragment program's loads of them, nvcc drops).
    Valid, as unobserved_ops, but the build points it out."""
    if spec.writes_y:
        return None
    last = _last_writing_op(spec)
    keys = REGISTRY[spec.op[last].kind].row_only_keys(spec.op[last])
    return (last, keys) if keys else None


def chain_context(spec: KernelSpec, layout: Layout | None = None) -> ChainContext:
    return ChainContext(
        dtype=spec.dtype,
        hidden=spec.hidden,
        outputs={"y": spec.writes_y, **{flag: spec.requests(flag) for flag in output_flags()}},
        layout=layout,
        head_dim=spec.head_dim,
        tokens=spec.tokens,
    )


def read_spec_text(path: Path) -> str:
    shown_path = str(path)
    try:
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise SpecError(shown_path, "", unreadable_reason(exc)) from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            # A device (a link to /dev/zero) never ends and a FIFO may never write: only a file has a size.
            raise SpecError(shown_path, "", f"is {file_kind(status.st_mode)}, not a regular file; a spec is a TOML file")
        data = _read_at_most(descriptor, MAX_SPEC_BYTES + 1)
    except OSError as exc:
        raise SpecError(shown_path, "", unreadable_reason(exc)) from None
    finally:
        os.close(descriptor)
    if len(data) > MAX_SPEC_BYTES:
        size = max(status.st_size, len(data))
        raise SpecError(shown_path, "", f"is {size} bytes; a spec is a small TOML file (at most {MAX_SPEC_BYTES})")
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise SpecError(shown_path, "", "is a binary file (it holds NUL bytes), not a TOML spec", line)
    if data.startswith(b"\xef\xbb\xbf"):
        raise SpecError(shown_path, "", "starts with a byte-order mark, which TOML does not allow; save it as UTF-8 without BOM", 1)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        line = data[: exc.start].count(b"\n") + 1
        column = exc.start - line_start + 1
        raise SpecError(
            shown_path, "", f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at column {column}); save the spec as UTF-8", line
        ) from None
    if not text.strip():
        raise SpecError(shown_path, "", f"is empty; a spec needs at least {_REQUIRED}")
    if all(not line.strip() or line.lstrip().startswith("#") for line in text.splitlines()):
        raise SpecError(shown_path, "", f"holds only comments; a spec needs at least {_REQUIRED}")
    return text


def _read_at_most(descriptor: int, limit: int) -> bytes:
    """Up to `limit` bytes: one past the size limit is enough to refuse a file, however large it is."""
    chunks, left = [], limit
    while left and (chunk := os.read(descriptor, left)):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def unreadable_reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "is a loop of symbolic links (following them comes back to where they start); point it at a spec file"
    return f"cannot be read: {exc.strerror}"


def file_kind(mode: int) -> str:
    kinds = [
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ]
    return next((name for test, name in kinds if test(mode)), "a special file")


_REQUIRED = "name, dtype, hidden and one [[op]] table"


def parse_spec(text: str, file: str) -> KernelSpec:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise toml_error(file, exc) from None
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise SpecError(file, "", "is not valid TOML for a spec: arrays or inline tables are nested too deeply") from None
    return checked_spec(raw, file, text)


def checked_spec(raw: dict, file: str, text: str = "") -> KernelSpec:
    """A spec from parsed data (a file's TOML, or a spec re-targeted in code), held to every rule: pydantic's
    of each key, then check_chain's across them. A SpecError names `file`, the key and, given `text`, its line."""
    try:
        spec = KernelSpec.model_validate(raw)
    except ValidationError as exc:
        raise pydantic_error(file, text, raw, exc) from None
    return held_to_rules(spec, file, text)


def held_to_rules(spec: KernelSpec, file: str, text: str = "") -> KernelSpec:
    """`spec` once check_chain passes: a KernelSpec made in Python has passed only pydantic's checks of each
    field. A broken rule is a SpecError naming `file`, the key and, given `text`, its line."""
    try:
        check_chain(spec)
    except ChainError as exc:
        raise SpecError(file, exc.key, exc.message, line_of(text, exc.key)) from None
    return spec


def load_spec(path: Path) -> tuple[KernelSpec, str]:
    """The parsed spec and its text (the text feeds the content hash and error line lookups)."""
    text = read_spec_text(path)
    return parse_spec(text, str(path)), text


# After KernelSpec: the translator reads the models to say what each key allows.
from .spec_messages import pydantic_error, toml_error  # noqa: E402
