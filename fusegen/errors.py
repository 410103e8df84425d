"""Errors meant for people: which file, which line, which key, what was wrong, what is allowed."""
from __future__ import annotations

import difflib
from dataclasses import dataclass

# Exit status of the CLI when a spec is wrong, distinct from crashes (1) and success (0).
SPEC_ERROR_EXIT = 2


def did_you_mean(word: str, choices) -> str:
    close = difflib.get_close_matches(str(word), sorted(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def shown(value) -> str:
    """A user value rendered safely on one line: long or odd strings cannot flood or spoof the message."""
    text = ascii(value) if isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass
class SpecError(Exception):
    file: str
    key: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        key = f" {self.key}:" if self.key else ""
        return f"{where}:{key} {self.message}"


class ChainError(Exception):
    """A rule broken by a parsed spec, raised where the file is not known; `key` is the path in the spec."""

    def __init__(self, key: str, message: str):
        super().__init__(f"{key}: {message}")
        self.key = key
        self.message = message
