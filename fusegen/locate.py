"""Maps a spec key path such as `op[2].rope_dim` to the line of the TOML file that set it.

tomllib keeps no positions, so this scans the text for table headers and `key =` lines. It only has to
understand the flat shape specs use ([[op]] arrays of tables, plain tables, dotted keys); anything it
cannot place falls back to the line of the enclosing table or key (an inline `op = [{...}]` array is
placed at `op =`), and returns None when nothing encloses it.
"""

from __future__ import annotations

import re
import tomllib

_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-]+)\s*\]\]?\s*(#.*)?$")
_BARE = r"[A-Za-z0-9_\-]+"
_QUOTED = r"\"(?:[^\"\\]|\\.)*\"|'[^']*'"
_ASSIGN = re.compile(rf"^\s*({_BARE}(?:\s*\.\s*{_BARE})*|{_QUOTED})\s*=")


def key_lines(text: str) -> dict[str, int]:
    lines: dict[str, int] = {}
    table = ""
    counts: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(raw)
        if header:
            name = header.group(2)
            if header.group(1) == "[[":
                index = counts.get(name, 0)
                counts[name] = index + 1
                table = f"{name}[{index}]"
                lines.setdefault(name, number)  # for errors about the whole array, such as [[schedule]]
            else:
                table = name
            lines.setdefault(table, number)
            continue
        assign = _ASSIGN.match(raw)
        if assign:
            key = assign.group(1)
            key = _unquote(key) if key[0] in "\"'" else re.sub(r"\s+", "", key)
            lines.setdefault(f"{table}.{key}" if table else key, number)
    return lines


def _unquote(key: str) -> str:
    """A quoted key as TOML reads it (escapes decoded), so it matches the key in an error's path."""
    try:
        return tomllib.loads(f"key = {key}")["key"]
    except tomllib.TOMLDecodeError:
        return key[1:-1]


def _parent(path: str) -> str:
    if path.endswith("]"):
        return path[: path.rindex("[")]
    return path.rsplit(".", 1)[0] if "." in path else ""


def line_of(text: str, key_path: str) -> int | None:
    lines = key_lines(text)
    path = key_path
    while path:
        if path in lines:
            return lines[path]
        path = _parent(path)
    return None
