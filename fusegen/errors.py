"""Errors meant for people: which file, which line, which key, what was wrong, what is allowed."""

from __future__ import annotations

import datetime
import difflib
import reprlib
from dataclasses import dataclass

# Exit status of the CLI when a spec is wrong, distinct from crashes (1) and success (0).
SPEC_ERROR_EXIT = 2

# Tables and arrays in a message are written a few levels deep, no more: TOML lets a spec nest them
# thousands of levels deep (dotted keys), past the recursion limit of repr. `shown` cuts the text at 60
# characters anyway, so only the depth limit changes what a person sees.
_NESTED_VALUE = reprlib.Repr()
_NESTED_VALUE.maxlevel = 3
_NESTED_VALUE.maxdict = _NESTED_VALUE.maxlist = _NESTED_VALUE.maxstring = _NESTED_VALUE.maxother = 60


def did_you_mean(word: str, choices, aliases: dict[str, str] | None = None) -> str:
    """A close spelling among `choices`, ignoring case (`RMSNorm` → `rmsnorm`); `aliases` maps other
    names in common use (`fp16`) to the choice they stand for."""
    by_lower = {str(choice).lower(): str(choice) for choice in choices}
    typed = str(word).lower()
    guess = aliases.get(typed) if aliases else None
    if guess is None:
        close = difflib.get_close_matches(typed, sorted(by_lower), n=1, cutoff=0.6)
        guess = by_lower[close[0]] if close else None
    return f" (did you mean '{guess}'?)" if guess else ""


def shown(value) -> str:
    """A user value written as in TOML, safely on one line: long or odd strings cannot flood or spoof the message."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = ascii(value)
    elif isinstance(value, (datetime.date, datetime.time)):
        text = f"the date/time {value.isoformat()}"
    elif isinstance(value, dict):
        text = f"a table {_NESTED_VALUE.repr(value)}"
    elif isinstance(value, list):
        text = f"an array {_NESTED_VALUE.repr(value)}"
    else:
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def one_line(text: str) -> str:
    """`text` with line breaks and other unprintable characters escaped: one error is one line, and a
    file or key name cannot inject terminal escapes or a fake second message."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


@dataclass
class SpecError(Exception):
    file: str
    key: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        key = f" {self.key}:" if self.key else ""
        return one_line(f"{where}:{key} {self.message}")


class ChainError(Exception):
    """A rule broken by a parsed spec, raised where the file is not known; `key` is the path in the spec."""

    def __init__(self, key: str, message: str):
        super().__init__(f"{key}: {message}")
        self.key = key
        self.message = message


class UsageError(Exception):
    """A command line or output directory the build cannot use (a path in the way, a missing file it
    names); the message names the path and what to do. The CLI exits with SPEC_ERROR_EXIT."""
