"""Tuning winners: the schedule measured fastest per (kernel problem, GPU, token bucket).

`fusegen tune` measures them on a GPU and writes them to a JSON file in the project (committed, like
generated/); `fusegen build` reads that file and gives every kernel one routed program per range of
token counts whose winner differs. A problem is the spec without its name and without the schedule
hints it leaves "auto", so two specs of the same chain and shape share their winners, and a spec that
pins a hint is tuned only over the hints it leaves free.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import os
import re
import stat
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, ValidationError, model_validator

from .errors import SpecError, shown
from .model import TokenRange
from .ops import added_key
from .strict import Strict

TUNING_FILE = "tuning.json"
# The committed file of every example at two widths and two dtypes is ~50 KB; a limit far above any real
# table, so a runaway or hostile file is refused before it is parsed.
MAX_TUNING_BYTES = 16 * 1024 * 1024
# Build machines have no GPU: the winners of this GPU are used unless `--gpu` names another.
DEFAULT_GPU = "NVIDIA H200"


@dataclass(frozen=True)
class Bucket(TokenRange):
    measured_at: int  # the token count timed for the whole bucket


# Decode-sized batches are latency-bound (a handful of blocks on 132 SMs), prefill-sized ones
# bandwidth-bound; the middle bucket is where the grid first fills the GPU.
BUCKETS = (Bucket(1, 64, 8), Bucket(65, 1024, 256), Bucket(1025, None, 16384))


@dataclass(frozen=True)
class TunedRoute(TokenRange):
    """What the planner takes from the tuning file: schedule hints for a range of token counts."""

    hints: dict
    origin: str


@dataclass(frozen=True)
class NearbyRoute(TunedRoute):
    """Winners of the same chain tuned at another width of the same width bucket: the planner follows
    them where it can and falls back to its own rules where a hint does not fit this width."""

    tuned_hidden: int


def _matching(pattern: str, what: str):
    """A string check for the model: the whole string matches `pattern`, else an error saying `what` is allowed."""
    compiled = re.compile(pattern)

    def check(text: str) -> str:
        if not compiled.fullmatch(text):
            raise ValueError(f"{shown(text)} is not {what}")
        return text

    return AfterValidator(check)


def _iso_date(text: str) -> str:
    try:
        datetime.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{shown(text)} is not {DATE_RULE}") from None
    return text


# Every string of the file is held to a form that says what it is: text from here reaches the generated
# kernel.py's docstring (the GPU, date and commit a route was tuned with), and no text but the validated
# spec may reach generated source as anything but these forms (emit escapes it as well).
GPU_NAME_PATTERN, GPU_NAME_RULE = r"[\x20-\x7e]{1,64}", "a GPU name: 1-64 printable ASCII characters"
GpuName = Annotated[str, _matching(GPU_NAME_PATTERN, GPU_NAME_RULE)]
DATE_RULE = "an ISO 8601 date or date and time (2026-11-29T13:48:44+00:00)"
Date = Annotated[
    str, _matching(r"\d{4}-\d\d-\d\d(T\d\d:\d\d(:\d\d(\.\d{1,6})?)?(Z|[+-]\d\d:\d\d)?)?", DATE_RULE), AfterValidator(_iso_date)
]
COMMIT_RULE = "a git commit: 4-40 lowercase hex digits"
Commit = Annotated[str, _matching(r"[0-9a-f]{4,40}", COMMIT_RULE)]
Version = Annotated[
    str, _matching(r"[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}", "a version: up to 64 letters, digits and . + _ -, starting with a letter or digit")
]
ProblemKey = Annotated[str, _matching(r"[0-9a-f]{16}", "a problem key: 16 lowercase hex digits (a hash of the chain and shape)")]
# Readable only (never emitted): the → of a chain is printable, a line break or terminal escape is not.
ProblemSummary = Annotated[str, _matching(r"[^\x00-\x1f\x7f-\x9f\u2028\u2029]{1,256}", "a summary of up to 256 characters on one line")]


def checked_gpu_name(name: str, where: str) -> str:
    """`name` if it is a GPU name the tuning file can hold; a SpecError naming `where` (an option or
    variable) otherwise."""
    if not re.fullmatch(GPU_NAME_PATTERN, name):
        raise SpecError(where, "", f"{shown(name)} is not {GPU_NAME_RULE}")
    return name


class WinnerHints(Strict):
    """Every schedule hint, concrete: what the winning candidate was planned with."""

    variant: Literal["fragment", "stream", "reread", "naive", "splitk"]
    block_m: int = Field(ge=1)
    threads: int = Field(ge=32)
    blk_k: Literal["auto"] | int
    prefetch: Literal["auto"] | bool
    joint_reduction: Literal["auto"] | bool = "auto"  # absent in files tuned before the hint existed
    blocks_per_sm: Literal["auto"] | int = "auto"  # likewise
    ring_slots: Literal["auto"] | int = "auto"  # likewise
    # Left out of the hints at "auto", so the winners of every tuned kernel, and its identity, stay as they were.
    row_split: Literal["auto"] | int = Field(**added_key("auto"))
    ring: Literal["auto", "shared", "registers"] = Field(**added_key("auto"))
    rows_share_threads: Literal["auto"] | bool = Field(**added_key("auto"))


class BucketWinner(Strict):
    first_tokens: int = Field(ge=1)
    last_tokens: int | None = Field(ge=1)
    measured_at: int = Field(ge=1)
    hints: WinnerHints
    median_us: float = Field(gt=0)
    planner_median_us: float = Field(gt=0)  # the schedule the planner picks without tuning
    candidates: int = Field(ge=1)


class Measured(Strict):
    """Where the numbers come from; any of them may be unknown."""

    date: Date | None = None
    commit: Commit | None = None
    driver: Version | None = None
    torch: Version | None = None
    tilelang: Version | None = None


class GpuWinners(Strict):
    measured: Measured
    buckets: list[BucketWinner] = Field(min_length=1)

    @model_validator(mode="after")
    def _cover_every_count(self):
        expected = 1
        for bucket in self.buckets:
            if bucket.first_tokens != expected or (bucket.last_tokens is not None and bucket.last_tokens < bucket.first_tokens):
                raise ValueError(f"buckets must cover 1, 2, 3, … tokens in order; one starts at {bucket.first_tokens}")
            expected = None if bucket.last_tokens is None else bucket.last_tokens + 1
            if expected is None:
                break
        if expected is not None or self.buckets[-1].last_tokens is not None:
            raise ValueError("the last bucket must have last_tokens = null (no upper limit)")
        return self


class ProblemWinners(Strict):
    problem: ProblemSummary  # readable summary; the key is its hash
    # The problem without its width (chain_key) and the width: how a spec at an untuned width of the same
    # chain finds these winners. Absent in files tuned before nearby widths were looked up.
    chain: ProblemKey | None = None
    hidden: int | None = Field(default=None, ge=1)
    gpus: dict[GpuName, GpuWinners]


class TuningTable(Strict):
    format: Literal[1] = 1
    problems: dict[ProblemKey, ProblemWinners] = {}


@dataclass(frozen=True)
class Tuning:
    """The winners a build uses: one table, one GPU's column of it."""

    table: TuningTable
    gpu: str
    path: str

    @classmethod
    def load(cls, path: Path, gpu: str = DEFAULT_GPU) -> Tuning:
        return cls(load_table(path), checked_gpu_name(gpu, "--gpu"), str(path))

    def routes(self, spec) -> tuple[TunedRoute, ...]:
        return routes_for(self.table, spec, self.gpu)


UNTUNED = Tuning(TuningTable(), DEFAULT_GPU, "")


def problem_of(spec) -> dict:
    data = spec.model_dump(mode="json")
    del data["name"]
    data["schedule"] = {key: value for key, value in data["schedule"].items() if value != "auto"}
    return data


def problem_key(spec) -> str:
    return hashlib.sha256(json.dumps(problem_of(spec), sort_keys=True).encode()).hexdigest()[:16]


def chain_key(spec) -> str:
    """The problem without its width: specs that differ only in hidden share it."""
    chain = problem_of(spec)
    del chain["hidden"]
    return hashlib.sha256(json.dumps(chain, sort_keys=True).encode()).hexdigest()[:16]


def width_bucket(hidden: int) -> int:
    """Widths of one octave ([2^k, 2^(k+1))) share tuning: the schedule space moves with the values per
    thread, and the winners measured at 4096 and 7168 differ (NOTES.md steps 12–15), so a winner is not
    carried across a doubling."""
    return hidden.bit_length()


def problem_summary(spec) -> str:
    pinned = problem_of(spec)["schedule"]
    return (
        " → ".join(op.kind for op in spec.op)
        + f", {spec.dtype}, hidden {spec.hidden}"
        + (f", tokens {spec.tokens}" if spec.tokens else "")
        + (f", pinned {pinned}" if pinned else "")
    )


def _read_bounded(path: Path) -> bytes:
    """The file's bytes, refused unless it is a regular file of at most MAX_TUNING_BYTES: opened without
    blocking and checked before reading, so a FIFO cannot hang the build nor /dev/zero exhaust memory."""
    handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(handle).st_mode):
        os.close(handle)
        raise SpecError(str(path), "", "is not a regular file; a tuning file is JSON written by `fusegen tune`")
    with os.fdopen(handle, "rb") as file:
        data = file.read(MAX_TUNING_BYTES + 1)
    if len(data) > MAX_TUNING_BYTES:
        raise SpecError(str(path), "", f"is more than {MAX_TUNING_BYTES} bytes; a tuning file written by `fusegen tune` is far smaller")
    return data


def load_table(path: Path) -> TuningTable:
    """The table in `path`; no file is an empty table. A damaged file is a SpecError naming the key."""
    if not path.exists():
        return TuningTable()
    try:
        data = json.loads(_read_bounded(path).decode("utf-8"))
    except (OSError, ValueError) as exc:  # ValueError: not UTF-8, not JSON, or an integer of over 4300 digits
        raise SpecError(str(path), "", f"is not a readable JSON tuning file ({exc}); delete it or run `fusegen tune` again") from None
    except RecursionError:
        raise SpecError(
            str(path), "", "nests arrays or objects too deeply to be a tuning file; delete it or run `fusegen tune` again"
        ) from None
    try:
        return TuningTable.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(part) for part in first["loc"])
        message = first["msg"].removeprefix("Value error, ")
        raise SpecError(str(path), key, f"{message}; a tuning file is written by `fusegen tune`, not by hand") from None


def routes_for(table: TuningTable, spec, gpu: str) -> tuple[TunedRoute, ...]:
    """The winners for this spec on `gpu`, adjacent buckets with the same winner merged; where this
    shape was never tuned, those of the same chain at the nearest tuned width of its width bucket
    (NearbyRoute); () if neither."""
    entry = table.problems.get(problem_key(spec))
    winners = entry.gpus.get(gpu) if entry else None
    if winners is not None:
        return _merged_routes(winners, gpu, lambda first, last, hints, origin: TunedRoute(first, last, hints, origin))
    chain, bucket = chain_key(spec), width_bucket(spec.hidden)
    nearby = sorted(
        (abs(math.log2(other.hidden / spec.hidden)), other.hidden, key)
        for key, other in table.problems.items()
        if other.chain == chain and other.hidden and width_bucket(other.hidden) == bucket and gpu in other.gpus
    )
    if not nearby:
        return ()
    _, hidden, key = nearby[0]
    return _merged_routes(
        table.problems[key].gpus[gpu],
        gpu,
        lambda first, last, hints, origin: NearbyRoute(first, last, hints, f"{origin} at hidden {hidden}, the nearest tuned width", hidden),
    )


def _merged_routes(winners: GpuWinners, gpu: str, route) -> tuple[TunedRoute, ...]:
    routes: list[TunedRoute] = []
    when = (winners.measured.date or "date unknown")[:10]
    origin = f"tuning on {gpu} ({when}, commit {winners.measured.commit or 'unknown'})"
    for bucket in winners.buckets:
        hints = bucket.hints.model_dump()
        if routes and routes[-1].hints == hints:
            routes[-1] = replace(routes[-1], last_tokens=bucket.last_tokens)
            continue
        routes.append(route(bucket.first_tokens, bucket.last_tokens, hints, origin))
    return tuple(routes)


def with_winners(table: TuningTable, spec, gpu: str, winners: GpuWinners) -> TuningTable:
    problems = dict(table.problems)
    key = problem_key(spec)
    gpus = dict(problems[key].gpus) if key in problems else {}
    gpus[gpu] = winners
    problems[key] = ProblemWinners(problem=problem_summary(spec), chain=chain_key(spec), hidden=spec.hidden, gpus=gpus)
    return TuningTable(problems=problems)


def merged_tables(table: TuningTable, part: TuningTable) -> TuningTable:
    """`table` with `part`'s winners laid over it, problem by problem and GPU by GPU: how the tables of
    tune's per-GPU shards (each over its own specs) join the file the run updates."""
    problems = dict(table.problems)
    for key, tuned in part.problems.items():
        gpus = {**problems[key].gpus, **tuned.gpus} if key in problems else tuned.gpus
        problems[key] = tuned.model_copy(update={"gpus": gpus})
    return TuningTable(problems=problems)


def save_table(path: Path, table: TuningTable) -> bool:
    """Writes the table if its text changed (atomically); returns whether it did."""
    text = json.dumps(table.model_dump(mode="json"), indent=1, sort_keys=True) + "\n"
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    handle, draft = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(draft, path)
    return True
