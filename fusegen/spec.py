"""The spec contract: pydantic models for a kernel spec, loading from TOML, and the chain rules.

Every failure becomes one SpecError naming the file, the line where it can be known, the key path
(`op[2].rope_dim`), what was wrong and what is allowed.
"""
from __future__ import annotations

import keyword
import re
import tomllib
from pathlib import Path
from typing import Annotated, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import ChainError, SpecError, did_you_mean, shown
from .locate import line_of
from .ops import RANK_NAMES, REGISTRY, ChainContext

DTYPES = ("float16", "bfloat16", "float32")
# A row lives in registers: 1024 threads × 64 fp32 each is the most one block can hold.
MAX_HIDDEN = 65536
MIN_HIDDEN = 16
# Grid x is a signed 32-bit count of row blocks.
MAX_TOKENS = 2**31 - 1
NAME_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
NAME_RULE = "a name of ASCII letters, digits and '_', starting with a letter, at most 64 characters, not a Python keyword"
MAX_SPEC_BYTES = 64 * 1024


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Outputs(_Strict):
    y: Optional[bool] = None  # default: written whenever an op before the quantiser changes the row
    mean: bool = False
    rstd: bool = False


class ScheduleHints(_Strict):
    variant: Literal["auto", "fragment", "naive", "splitk"] = "auto"
    block_m: Union[Literal["auto"], int] = "auto"
    threads: Union[Literal["auto"], int] = "auto"
    blk_k: Union[Literal["auto"], int] = "auto"


OpUnion = Annotated[Union[tuple(op.spec for op in REGISTRY.values())], Field(discriminator="kind")]


class KernelSpec(_Strict):
    name: str
    dtype: Literal["float16", "bfloat16", "float32"]
    hidden: int = Field(ge=MIN_HIDDEN, le=MAX_HIDDEN)
    tokens: Optional[int] = Field(default=None, ge=1, le=MAX_TOKENS)
    op: list[OpUnion] = Field(min_length=1)
    outputs: Outputs = Outputs()
    schedule: ScheduleHints = ScheduleHints()

    @property
    def writes_y(self) -> bool:
        if self.outputs.y is not None:
            return self.outputs.y
        return any(REGISTRY[op.kind].transforms_row for op in self.op)


def check_name(name: str) -> None:
    if not NAME_PATTERN.fullmatch(name) or keyword.iskeyword(name) or keyword.issoftkeyword(name):
        raise ChainError("name", f"must be {NAME_RULE}; got {shown(name)}")


def check_chain(spec: KernelSpec) -> None:
    """Cross-field rules pydantic cannot express per field."""
    check_name(spec.name)
    seen_rank = -1
    for index, op in enumerate(spec.op):
        rank = REGISTRY[op.kind].rank
        if rank <= seen_rank:
            previous = next(o.kind for o in spec.op[:index] if REGISTRY[o.kind].rank >= rank)
            order = " → ".join(RANK_NAMES[r] for r in sorted(RANK_NAMES))
            raise ChainError(
                f"op[{index}].kind",
                f"'{op.kind}' cannot follow '{previous}': ops run in the order {order}, each at most once",
            )
        seen_rank = rank
    context = chain_context(spec)
    for index, op in enumerate(spec.op):
        for key, message in REGISTRY[op.kind].check(op, context):
            raise ChainError(f"op[{index}].{key}", message)
    check_outputs(spec)


def check_outputs(spec: KernelSpec) -> None:
    transforms = any(REGISTRY[op.kind].transforms_row for op in spec.op)
    if spec.outputs.y and not transforms:
        raise ChainError("outputs.y", "no op changes the row before quant_fp8, so Y would be a copy of x; set y = false")
    flags = {flag for op in spec.op for flag in REGISTRY[op.kind].output_flags}
    for flag in ("mean", "rstd"):
        if getattr(spec.outputs, flag) and flag not in flags:
            makers = sorted(op.kind for op in REGISTRY.values() if flag in op.output_flags)
            raise ChainError(f"outputs.{flag}", f"no op in this chain produces {flag}; it needs one of: {', '.join(makers)}")
    quantizes = any(op.kind == "quant_fp8" for op in spec.op)
    if not (spec.writes_y or quantizes or spec.outputs.mean or spec.outputs.rstd):
        raise ChainError("outputs.y", "the kernel would write nothing: keep y = true or add an output")


def chain_context(spec: KernelSpec, block_m: int = 1, padded_hidden: int | None = None) -> ChainContext:
    return ChainContext(
        dtype=spec.dtype,
        hidden=spec.hidden,
        block_m=block_m,
        padded_hidden=padded_hidden or spec.hidden,
        outputs={"y": spec.writes_y, "mean": spec.outputs.mean, "rstd": spec.outputs.rstd},
        transforms_before=False,
    )


# ---------------------------------------------------------------------------------------------------
# Turning pydantic's errors into one sentence for a person.

_TYPE_WORDS = {
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "string_type": "a string",
    "list_type": "an array of tables ([[op]])",
    "model_type": "a table",
    "dict_type": "a table",
    "model_attributes_type": "a table",
}
_BOUND_WORDS = {
    "greater_than": ("gt", "greater than"),
    "greater_than_equal": ("ge", "at least"),
    "less_than": ("lt", "less than"),
    "less_than_equal": ("le", "at most"),
}


def _model_at(loc: tuple, raw: dict) -> tuple[type[BaseModel] | None, str]:
    """The model owning the last key of `loc`, and the rendered key path."""
    model: type[BaseModel] | None = KernelSpec
    parts: list[str] = []
    node = raw
    i = 0
    while i < len(loc):
        item = loc[i]
        if isinstance(item, int):
            parts[-1] += f"[{item}]"
            node = node[item] if isinstance(node, list) and item < len(node) else {}
            kind = node.get("kind") if isinstance(node, dict) else None
            model = REGISTRY[kind].spec if kind in REGISTRY else None
            if i + 1 < len(loc) and loc[i + 1] == kind:
                i += 1  # pydantic puts the union tag in the path
            i += 1
            continue
        if model is None or item not in model.model_fields:
            parts.append(str(item))
            break
        parts.append(str(item))
        annotation = model.model_fields[item].annotation
        node = node.get(item, {}) if isinstance(node, dict) else {}
        model = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
        if item == "op":
            model = None
        elif model is None:
            break
        i += 1
    return model, ".".join(parts)


def _owner_fields(loc: tuple, raw: dict) -> list[str]:
    model, _ = _model_at(loc[:-1], raw) if loc else (KernelSpec, "")
    if loc and len(loc) == 1:
        model = KernelSpec
    return list(model.model_fields) if model else []


def _describe(error: dict, raw: dict, siblings: list[dict]) -> tuple[str, str]:
    loc = tuple(error["loc"])
    kind = error["type"]
    ctx = error.get("ctx") or {}
    _, key = _model_at(loc, raw)
    got = shown(error.get("input"))
    if kind == "extra_forbidden":
        allowed = _owner_fields(loc, raw)
        name = str(loc[-1])
        return key, f"unknown key {shown(name)}{did_you_mean(name, allowed)}; allowed keys: {', '.join(allowed)}"
    if kind == "missing":
        return key, "required key is missing"
    if kind == "union_tag_invalid":
        kinds = list(REGISTRY)
        tag = ctx.get("tag", "")
        return key + ".kind", f"unknown op kind {shown(tag)}{did_you_mean(tag, kinds)}; allowed: {', '.join(kinds)}"
    if kind == "union_tag_not_found":
        return key, f"each [[op]] needs a kind; allowed: {', '.join(REGISTRY)}"
    expectations = []
    for sibling in [error, *siblings]:
        if sibling["type"] == "literal_error":
            expectations.append(sibling["ctx"]["expected"])
        elif sibling["type"] in _TYPE_WORDS:
            expectations.append(_TYPE_WORDS[sibling["type"]])
    if kind in _BOUND_WORDS:
        name, words = _BOUND_WORDS[kind]
        return key, f"must be {words} {ctx[name]}, got {got}"
    if kind == "too_short":
        return key, "needs at least one entry"
    if expectations:
        return key, f"expected {' or '.join(dict.fromkeys(expectations))}, got {got}"
    return key, f"{error['msg']}, got {got}"


def _pydantic_error(file: str, text: str, raw: dict, exc: ValidationError) -> SpecError:
    errors = exc.errors()
    first = errors[0]
    _, key = _model_at(tuple(first["loc"]), raw)
    siblings = [e for e in errors[1:] if _model_at(tuple(e["loc"]), raw)[1] == key]
    key, message = _describe(first, raw, siblings)
    return SpecError(file, key, message, line_of(text, key))


def read_spec_text(path: Path) -> str:
    shown_path = str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SpecError(shown_path, "", f"cannot read the file: {exc.strerror}") from None
    if len(data) > MAX_SPEC_BYTES:
        raise SpecError(shown_path, "", f"is {len(data)} bytes; a spec is a small TOML file (at most {MAX_SPEC_BYTES})")
    if b"\x00" in data:
        raise SpecError(shown_path, "", "is a binary file, not a TOML spec")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SpecError(shown_path, "", "is not UTF-8 text; a spec is a TOML file", line) from None
    if not text.strip() or all(not l.strip() or l.lstrip().startswith("#") for l in text.splitlines()):
        raise SpecError(shown_path, "", "is empty; a spec needs at least name, dtype, hidden and one [[op]]")
    return text


_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


def parse_spec(text: str, file: str) -> KernelSpec:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        position = _TOML_POSITION.search(message)
        line = int(position.group(1)) if position else None
        detail = _TOML_POSITION.sub("", message)
        column = f" (column {position.group(2)})" if position else ""
        raise SpecError(file, "", f"is not valid TOML: {detail}{column}", line) from None
    try:
        spec = KernelSpec.model_validate(raw)
    except ValidationError as exc:
        raise _pydantic_error(file, text, raw, exc) from None
    try:
        check_chain(spec)
    except ChainError as exc:
        raise SpecError(file, exc.key, exc.message, line_of(text, exc.key)) from None
    return spec


def load_spec(path: Path) -> tuple[KernelSpec, str]:
    """The parsed spec and its text (the text feeds the content hash and error line lookups)."""
    text = read_spec_text(path)
    return parse_spec(text, str(path)), text
