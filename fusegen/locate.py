"""Maps a spec key path such as `op[2].rope_dim` to the line of the TOML file that set it.

tomllib keeps no positions, so this scans the text for table headers and `key =` lines. It only has to
understand the flat shape specs use ([[op]] arrays of tables and plain tables); anything it cannot place
returns None and the error is reported without a line.
"""
from __future__ import annotations

import re

_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-]+)\s*\]\]?\s*(#.*)?$")
_ASSIGN = re.compile(r"^\s*([A-Za-z0-9_\-]+|\"[^\"]*\")\s*=")


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
            else:
                table = name
            lines.setdefault(table, number)
            continue
        assign = _ASSIGN.match(raw)
        if assign:
            key = assign.group(1).strip('"')
            lines.setdefault(f"{table}.{key}" if table else key, number)
    return lines


def line_of(text: str, key_path: str) -> int | None:
    lines = key_lines(text)
    path = key_path
    while path:
        if path in lines:
            return lines[path]
        if "." not in path:
            break
        path = path.rsplit(".", 1)[0]
    return None
