"""Spec errors for people: pydantic's validation errors and tomllib's parse errors turned into one
sentence each — the key path as written (`op[2].rope_dim`), its line in the file, what was wrong, what
is allowed (read off the models: literals, ranges, descriptions) and a "did you mean" where one is
close. spec.py holds the contract; this module only explains breaches of it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import UnionType
from typing import Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from .errors import SpecError, did_you_mean, shown
from .locate import line_of
from .ops import REGISTRY
from .spec import DTYPES, KernelSpec

# Spellings of a dtype in torch or CUDA code, for "did you mean" where difflib finds nothing close.
DTYPE_ALIASES = {"fp16": "float16", "half": "float16", "bf16": "bfloat16", "fp32": "float32", "float": "float32"}
# fp8 is never an activation dtype (an op writes it); difflib would wrongly suggest float32 for these.
FP8_NAMES = {"fp8", "float8", "e4m3", "e4m3fn", "e5m2", "float8_e4m3fn", "float8_e5m2"}
_TYPE_ERRORS = {
    "int_type",
    "int_from_float",
    "float_type",
    "bool_type",
    "string_type",
    "list_type",
    "model_type",
    "dict_type",
    "model_attributes_type",
    "literal_error",
}
_BOUND_ERRORS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}
_BOUND_WORDS = {"gt": "greater than", "ge": "at least", "lt": "less than", "le": "at most"}
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
# A quoted value that TOML would read as a number or boolean without the quotes.
_UNQUOTED_SCALAR = re.compile(r"[+-]?(\d[\d_]*(\.\d+)?([eE][+-]?\d+)?|inf|nan)|true|false")


def _kinds() -> str:
    return _or(shown(kind) for kind in REGISTRY)


def _or(words) -> str:
    words = list(dict.fromkeys(words))
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _literals(annotation) -> list:
    if get_origin(annotation) is Literal:
        return list(get_args(annotation))
    return [value for arg in get_args(annotation) for value in _literals(arg)]


def _plain_types(annotation) -> set:
    if get_origin(annotation) in (Union, UnionType):
        return {t for arg in get_args(annotation) for t in _plain_types(arg)}
    return {annotation}


def _range_words(metadata) -> str:
    bounds = {name: getattr(m, name) for m in metadata for name in _BOUND_WORDS if getattr(m, name, None) is not None}
    if "ge" in bounds and "le" in bounds:
        return f" from {bounds['ge']} to {bounds['le']}"
    words = [f"{_BOUND_WORDS[name]} {value}" for name, value in bounds.items()]
    return " " + " and ".join(words) if words else ""


def _type_words(annotation, metadata=()) -> str:
    if get_origin(annotation) is Literal:
        return _or(shown(value) for value in get_args(annotation))
    if get_origin(annotation) in (Union, UnionType):
        return _or(_type_words(arg, metadata) for arg in get_args(annotation) if arg is not type(None))
    if annotation is bool:
        return "true or false"
    if annotation is int:
        return "an integer" + _range_words(metadata)
    if annotation is float:
        return "a number" + _range_words(metadata)
    if annotation is str:
        return "a string"
    if get_origin(annotation) is list:
        return f"one or more [[op]] tables, each with kind = {_kinds()}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"a table with keys {', '.join(annotation.model_fields)}"
    return str(annotation)


def _allowed(field: FieldInfo | None) -> str:
    """What a field accepts, in words: its description where it has one, else read off its type and bounds."""
    if field is None:
        return "a value"
    return field.description or _type_words(field.annotation, field.metadata)


@dataclass
class _Where:
    """Where a pydantic error points: the model owning the failing key, that key's field (None when the
    key is unknown), the path as shown to the user (`op[2].rope_dim`) and as written in the file."""

    owner: type[BaseModel] | None
    field: FieldInfo | None
    shown_path: str
    file_path: str

    @property
    def is_op_entry(self) -> bool:
        return self.file_path.endswith("]")


def _where(loc: tuple, raw: dict) -> _Where:
    model: type[BaseModel] | None = KernelSpec
    where = _Where(None, None, "", "")
    node = raw
    i = 0
    while i < len(loc):
        item = loc[i]
        if isinstance(item, int):  # an [[op]] entry: its kind picks the model of what follows
            where.shown_path += f"[{item}]"
            where.file_path += f"[{item}]"
            where.field = None
            node = node[item] if isinstance(node, list) and item < len(node) else None
            kind = node.get("kind") if isinstance(node, dict) else None
            model = REGISTRY[kind].spec if isinstance(kind, str) and kind in REGISTRY else None
            if i + 1 < len(loc) and loc[i + 1] == kind:
                i += 1  # pydantic puts the union tag in the path
            i += 1
            continue
        text = str(item)
        # Odd keys are shown quoted and escaped, so a key cannot break the message's line.
        where.shown_path += ("." if where.shown_path else "") + (text if _BARE_KEY.fullmatch(text) else shown(text))
        where.file_path += ("." if where.file_path else "") + text
        where.owner = model
        where.field = model.model_fields.get(text) if model else None
        if where.field is None:
            break
        node = node.get(text) if isinstance(node, dict) else None
        annotation = where.field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            model = annotation
        elif get_origin(annotation) is not list:
            break  # a leaf: what follows in the path names union members, not keys
        i += 1
    return where


def _unknown_key(where: _Where, name: str) -> str:
    allowed = list(where.owner.model_fields) if where.owner else []
    message = f"unknown key {shown(name)}{did_you_mean(name, allowed)}; allowed keys: {', '.join(allowed)}"
    if where.owner is not KernelSpec and name in KernelSpec.model_fields:
        # TOML puts every key after a [table] header into that table: a common slip for top-level keys.
        message += f"; '{name}' is a top-level key: move it above the first [table] header"
    return message


def _unknown_kind(tag) -> str:
    if not isinstance(tag, str):
        return f"expected {_kinds()}, got {shown(tag)}"
    return f"unknown op kind {shown(tag)}{did_you_mean(tag, REGISTRY)}; allowed: {_kinds()}"


def _describe(error: dict, where: _Where) -> tuple[str, str]:
    """(key below the error's location, or ""; the sentence saying what was wrong and what is allowed)."""
    kind = error["type"]
    value = error.get("input")
    if kind == "extra_forbidden":
        return "", _unknown_key(where, str(error["loc"][-1]))
    if kind == "union_tag_invalid":
        return "kind", _unknown_kind(value.get("kind") if isinstance(value, dict) else None)
    if kind == "union_tag_not_found":
        return "kind", f"required key is missing: each [[op]] needs kind = {_kinds()}"
    allowed = f"an [[op]] table with kind = {_kinds()}" if where.is_op_entry else _allowed(where.field)
    if kind == "missing":
        return "", f"required key is missing; expected {allowed}"
    if kind == "too_short":
        return "", f"needs at least one entry; expected {allowed}"
    if kind in _BOUND_ERRORS:
        return "", f"must be {allowed}, got {shown(value)}"
    hint = _value_hint(value, where.field) if isinstance(value, str) and where.field else ""
    if kind in _TYPE_ERRORS:
        return "", f"expected {allowed}, got {shown(value)}{hint}"
    return "", f"{error['msg']}; expected {allowed}, got {shown(value)}{hint}"


def _value_hint(value: str, field: FieldInfo) -> str:
    """A guess at what a wrong string meant: a close allowed spelling, or a number typed in quotes."""
    if field is KernelSpec.model_fields["dtype"]:
        if value.lower() in FP8_NAMES:
            writers = " or ".join(op.kind for op in REGISTRY.values() if any(out.fp8 for out in op.outputs))
            return f" (fp8 is not an activation dtype: a {writers} op writes it)"
        return did_you_mean(value, DTYPES, DTYPE_ALIASES)
    hint = did_you_mean(value, [v for v in _literals(field.annotation) if isinstance(v, str)])
    if not hint and _plain_types(field.annotation) & {int, float, bool} and _UNQUOTED_SCALAR.fullmatch(value):
        hint = f" (numbers and true/false are written without quotes: {value})"
    return hint


def pydantic_error(file: str, text: str, raw: dict, exc: ValidationError) -> SpecError:
    # An unknown key goes first: it is most often the misspelling of a key another error calls missing.
    first = min(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
    where = _where(tuple(first["loc"]), raw)
    below, message = _describe(first, where)
    key, file_key = (f"{where.shown_path}.{below}", f"{where.file_path}.{below}") if below else (where.shown_path, where.file_path)
    return SpecError(file, key, message, line_of(text, file_key))


_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")
# tomllib's terse messages, and what the user can do about each.
_TOML_HINTS = {
    "Invalid value": "a value is a quoted string, a number, true/false, an array [...] or an inline table {...}",
    "Invalid statement": "each line is key = value, a [table] or [[op]] header, or a # comment",
    "Cannot overwrite a value": "each key may be set only once",
    "Cannot declare": "each [table] may appear only once; [[op]] is the one that repeats",
    "Illegal character '\\n'": "a string must be closed on the line where it starts",
    "Unterminated string": "a string needs its closing quote",
    "Unclosed array": "an array needs its closing ]",
    "Unclosed inline table": "an inline table needs its closing } on the same line",
}
# tomllib names keys as Python tuples: ('outputs',) reads better as [outputs].
_TOML_KEY_TUPLE = re.compile(r"\(((?:'[^']*'(?:, )?)+),?\)")


def toml_error(file: str, exc: Exception) -> SpecError:
    message = _TOML_KEY_TUPLE.sub(lambda m: "[" + ".".join(re.findall(r"'([^']*)'", m.group(1))) + "]", str(exc))
    position = _TOML_POSITION.search(message)
    detail = _TOML_POSITION.sub("", message)
    where = f" at column {position.group(2)}" if position else ""
    hint = next((f"; {h}" for start, h in _TOML_HINTS.items() if detail.startswith(start)), "")
    return SpecError(file, "", f"is not valid TOML: {detail}{where}{hint}", int(position.group(1)) if position else None)
