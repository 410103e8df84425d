"""Malformed and hostile inputs, run through the real `fusegen` CLI (CPU only), each outcome classified.

    python scripts/malformed_corpus.py REPORT.md [--quick] [--seed N] [--workers N] [--only CATEGORY]

Every case gets a fresh temporary root holding `project/` (the working directory of the command) and
`sentinel/` (files no command may touch). The command runs as `python -m fusegen ...` with this
checkout first on PYTHONPATH and a timeout. Outcomes:

- clean: refused with exit status 2, no traceback, an `error:` line on stderr, --out untouched;
- accepted: exit 0, and every kernel in --out is whole (its files there and parseable, no journal or
  staging left behind);
- unclean: refused otherwise (another exit status, no `error:` line, --out written) — listed, not fatal;
- traceback, hang (timeout), harm (a file outside what the command may write created, changed or
  deleted; generated code that a hostile string escaped into; an accepted build leaving --out
  inconsistent) — the script exits 1 when any case ends so.

The corpus is generated from the seed (printed), so a run can be repeated exactly; --quick runs a
small sample of it, bounded for a unit test.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import random
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUTCOMES = ("clean", "accepted", "unclean", "traceback", "hang", "harm")
FATAL = {"traceback", "hang", "harm"}
REFUSAL_EXIT = 2
# If a hostile string escaped a comment or string literal of generated code, this name would be code.
MARKER = "FUSEGEN_PWNED"
TIMEOUT_S = 60
COMPILE_TIMEOUT_S = 240
GENERATED_FILES = ("__init__.py", "kernel.py", "reference.py", "kernel.cu", "plan.json")

BASE = {
    "": [("name", '"tiny"'), ("dtype", '"float16"'), ("hidden", "256"), ("tokens", None)],
    "op0": [("kind", '"rmsnorm"'), ("eps", "1e-6"), ("weight", "true")],
    "op1": [("kind", '"rope"'), ("rope_dim", "64"), ("span", '"tail"'), ("style", '"neox"')],
    "op2": [("kind", '"quant_fp8"'), ("group_size", '"token"'), ("fp8", '"e4m3fn"'), ("scale", '"fp32"'), ("amax_floor", "1e-10")],
    "outputs": [("y", "true"), ("mean", None), ("rstd", None)],
    "schedule": [
        ("variant", '"auto"'),
        ("block_m", None),
        ("threads", None),
        ("blk_k", None),
        ("prefetch", None),
        ("joint_reduction", None),
        ("blocks_per_sm", None),
        ("ring_slots", None),
        ("ring", None),
        ("row_split", None),
        ("rows_share_threads", None),
    ],
}
NUMERIC_KEYS = {
    ("", "hidden"),
    ("", "tokens"),
    ("op1", "rope_dim"),
    ("op2", "group_size"),
    ("schedule", "block_m"),
    ("schedule", "threads"),
    ("schedule", "blk_k"),
    ("schedule", "blocks_per_sm"),
    ("schedule", "ring_slots"),
    ("schedule", "row_split"),
}
FLOAT_KEYS = {("op0", "eps"), ("op2", "amax_floor")}
WRONG_TYPES = ['"text"', '""', "7", "-3", "2.5", "true", "[1, 2]", "[]", "{ a = 1 }", "1979-05-27T07:32:00Z", "07:32:00"]
INT_EDGES = [
    "0",
    "-1",
    "1",
    "3",
    "17",
    "4097",
    "65537",
    "1000000000",
    "9223372036854775807",
    "-9223372036854775808",
    "99999999999999999999",
]
FLOAT_EDGES = ["0.0", "-0.0", "5e-324", "2.2e-308", "1e-50", "1e-45", "1.0000001", "1e308", "inf", "-inf", "nan", "-1e-6", "1"]
NAMES = [
    "class",
    "def",
    "None",
    "True",
    "import",
    "lambda",
    "match",
    "_",
    "__init__",
    "__pycache__",
    "__main__",
    "print",
    "len",
    "os",
    "sys",
    "json",
    "torch",
    "tilelang",
    "generated",
    "fusegen",
    "con",
    "nul",
    "aux",
    "ρμς",
    "名前",
    "a\u200bb",
    "ℌx",
    "a" * 300,
    "a" * 100000,
    "",
    " tiny",
    "tiny ",
    "tiny\n",
    "../evil",
    "a/b",
    "a.b",
    "-x",
    "9x",
    "x-y",
    "x\\u0000y",
]
TOML_SYNTAX = [
    'name = "tiny',
    "name = tiny",
    "name == 1",
    "[[op]\nkind='rmsnorm'",
    "= 1",
    'name = "a"\nname = "b"',
    "[op]\n[[op]]",
    "hidden = 0x",
    "hidden = 1__0",
    "eps = 1e",
    "a = [1, 2",
    "a = {b = 1",
    "a = {b = 1,}",
    '"""\n',
    "name = 'a\nb'",
    "[]",
    "[a.]",
    "a.b = 1\na = 2",
    "\x7f = 1",
    'name = "\\q"',
    "a = 1979-13-40",
    "\t\t= 3",
]


@dataclass
class Case:
    category: str
    label: str
    argv: list[str]
    setup: Callable[[Path, Path], None]  # (project, sentinel) -> None; writes the inputs
    out: str | None = "generated"  # where the command may write, relative to the project
    compiles: bool = False  # a valid build: costs a TileLang compilation
    outcome: str = ""
    detail: str = ""
    lines: list[str] = field(default_factory=list)


def toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False).replace("\\u007f", "\\u007F")


def render(overrides: dict | None = None, extra: str = "") -> str:
    """The base spec as TOML, with (section, key) -> TOML snippet overrides (None drops the key)."""
    overrides = overrides or {}
    lines = []
    for section, keys in BASE.items():
        if section.startswith("op"):
            lines.append("\n[[op]]")
        elif section:
            lines.append(f"\n[{section}]")
        for key, value in keys:
            value = overrides.get((section, key), value)
            if value is not None:
                lines.append(f"{key} = {value}")
        if section == "":
            lines.append(extra)
    return "\n".join(lines) + "\n"


def write(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)


def spec_case(category: str, label: str, text: str | bytes, file_name: str = "spec.toml", by_dir: bool = False, compiles=False) -> Case:
    def setup(project: Path, sentinel: Path) -> None:
        write(project / "specs" / file_name, text)

    target = "specs" if by_dir else os.path.join("specs", file_name)
    return Case(category, label, ["build", target, "--jobs", "1"], setup, compiles=compiles)


def spec_cases(rng: random.Random) -> list[Case]:
    cases = []
    for section, key in [(s, k) for s, keys in BASE.items() for k, _ in keys]:
        values = list(WRONG_TYPES)
        if (section, key) in NUMERIC_KEYS:
            values += INT_EDGES
        if (section, key) in FLOAT_KEYS:
            values += FLOAT_EDGES
        for value in values:
            cases.append(spec_case("spec: wrong type or range", f"{section or 'top'}.{key} = {value}", render({(section, key): value})))
        cases.append(spec_case("spec: wrong type or range", f"{section or 'top'}.{key} missing", render({(section, key): None})))
    for name in NAMES:
        cases.append(spec_case("spec: names", f"name = {ascii(name)[:60]}", render({("", "name"): toml_string(name)})))
    for index, text in enumerate(TOML_SYNTAX):
        cases.append(spec_case("spec: TOML syntax", f"syntax {index}: {ascii(text)[:50]}", text))
    for index in range(15):  # the base spec cut at random points and with random bytes flipped
        text = render().encode()
        cut = rng.randrange(1, len(text))
        flipped = bytearray(text)
        flipped[rng.randrange(len(flipped))] = rng.randrange(256)
        cases.append(spec_case("spec: TOML syntax", f"truncated at byte {cut}", text[:cut]))
        cases.append(spec_case("spec: binary and encodings", f"one byte flipped (#{index})", bytes(flipped)))
    unknown = [
        ("unknown top-level key", render(extra="colour = 1")),
        ("unknown op key", render({("op0", "weights"): "true"})),
        ("unknown kind", render({("op0", "kind"): '"softmax"'})),
        ("kind in capitals", render({("op0", "kind"): '"RMSNorm"'})),
        ("unknown outputs key", render({("outputs", "z"): "true"})),
        ("unknown schedule key", render({("schedule", "warps"): "4"})),
        ("op as a table", render().replace("[[op]]", "[op]", 1)),
        ("op as a string", 'name = "tiny"\ndtype = "float16"\nhidden = 256\nop = "rmsnorm"\n'),
        ("no ops", 'name = "tiny"\ndtype = "float16"\nhidden = 256\nop = []\n'),
        ("ops out of order", render().replace('"rmsnorm"', '"quant_fp8"', 1)),
        ("two norms", render({("op1", "kind"): '"rmsnorm"', ("op1", "rope_dim"): None, ("op1", "span"): None, ("op1", "style"): None})),
        ("outputs as array", render().replace("[outputs]", "[[outputs]]")),
        ("schedule twice", render() + "\n[schedule]\nthreads = 64\n"),
        ("op with unknown kind and keys", render(extra="[[op]]\nkind = 'x'\nfoo = 1\n")),
        ("empty file", ""),
        ("only comments", "# nothing\n" * 10),
    ]
    cases += [spec_case("spec: unknown keys and shapes", label, text) for label, text in unknown]
    deep = [
        ("array nested 100000 deep", "name = " + "[" * 100000 + "]" * 100000),
        ("inline table nested 5000 deep", "name = " + "{a = " * 5000 + "1" + "}" * 5000),
        ("dotted key 20000 parts", ".".join(["a"] * 20000) + " = 1"),
        ("table header 20000 parts", "[" + ".".join(["a"] * 20000) + "]"),
        ("100000 ops", render() + "\n[[op]]\nkind = 'rmsnorm'\n" * 100000),
        ("8 MB of comments", render() + "#" * (8 << 20)),
        ("8 MB string value", render({("", "name"): '"' + "a" * (8 << 20) + '"'})),
        ("100000-digit integer", render({("", "hidden"): "1" * 100000})),
        ("long line of keys", "\n".join(f"k{i} = {i}" for i in range(50000))),
    ]
    cases += [spec_case("spec: deep and huge", label, text) for label, text in deep]
    binary = [
        ("NUL bytes", render().encode().replace(b"tiny", b"ti\0ny")),
        ("random bytes", bytes(rng.randrange(256) for _ in range(4096))),
        ("UTF-8 BOM", b"\xef\xbb\xbf" + render().encode()),
        ("UTF-16", render().encode("utf-16")),
        ("latin-1 in a string", render({("", "name"): '"tin\xe9"'}).encode("latin-1")),
        ("lone continuation byte", render().encode() + b"# \x80\n"),
        ("surrogate escape", render({("", "name"): '"\\ud800"'})),
        ("overlong UTF-8", render().encode() + b"# \xc0\xaf\n"),
        ("CR line ends", render().replace("\n", "\r").encode()),
        ("CRLF line ends", render().replace("\n", "\r\n").encode()),
        ("ELF header", b"\x7fELF\x02\x01\x01" + bytes(200)),
        ("gzip", b"\x1f\x8b\x08\x00" + bytes(100)),
    ]
    cases += [spec_case("spec: binary and encodings", label, data) for label, data in binary]
    return cases


def file_cases() -> list[Case]:
    good = render()
    cases = []
    for label, name in [
        ("newline in file name", "a\nb.toml"),
        ("terminal escape in file name", "a\x1b[31mred.toml"),
        ("backslash in file name", "a\\b.toml"),
        ("file name starting with a dash", "-rf.toml"),
        ("spaces in file name", "my spec.toml"),
        ("unicode file name", "ρμς.toml"),
        ("quote in file name", "a\"b'.toml"),
        ("very long file name", "a" * 250 + ".toml"),
        ("file name with $(...)", "$(touch pwned).toml"),
    ]:
        # A bad key too, so the file name reaches the error message (and no compilation is needed).
        cases.append(spec_case("files: names", label, render({("", "hidden"): "0"}), name))
        cases.append(spec_case("files: names", label + " (by directory)", render({("", "hidden"): "0"}), name, by_dir=True))

    def links(kind):
        def setup(project: Path, sentinel: Path) -> None:
            specs = project / "specs"
            specs.mkdir(parents=True)
            if kind == "self loop":
                os.symlink("loop.toml", specs / "loop.toml")
            elif kind == "two-link loop":
                os.symlink("b.toml", specs / "a.toml")
                os.symlink("a.toml", specs / "b.toml")
            elif kind == "directory loop":
                write(specs / "ok.toml", render({("", "hidden"): "0"}))
                os.symlink(".", specs / "again")
            elif kind == "dangling link":
                os.symlink("nowhere.toml", specs / "gone.toml")
            elif kind == "link to /dev/zero":
                os.symlink("/dev/zero", specs / "zero.toml")
            elif kind == "link to /dev/urandom":
                os.symlink("/dev/urandom", specs / "random.toml")
            elif kind == "link to a file outside":
                write(sentinel / "outside.toml", render({("", "hidden"): "0"}))
                os.symlink(sentinel / "outside.toml", specs / "outside.toml")
            elif kind == "FIFO":
                os.mkfifo(specs / "fifo.toml")
            elif kind == "directory named .toml":
                (specs / "dir.toml").mkdir()
            elif kind == "unreadable file":
                write(specs / "secret.toml", good)
                os.chmod(specs / "secret.toml", 0)
            elif kind == "socket":
                import socket

                sock = socket.socket(socket.AF_UNIX)
                sock.bind(str(specs / "sock.toml"))
                sock.close()

        return setup

    for kind in [
        "self loop",
        "two-link loop",
        "directory loop",
        "dangling link",
        "link to /dev/zero",
        "link to /dev/urandom",
        "link to a file outside",
        "FIFO",
        "directory named .toml",
        "unreadable file",
        "socket",
    ]:
        cases.append(Case("files: links, FIFOs, directories", kind + " (by directory)", ["build", "specs", "--jobs", "1"], links(kind)))
    for kind, name in [
        ("self loop", "loop.toml"),
        ("FIFO", "fifo.toml"),
        ("directory named .toml", "dir.toml"),
        ("link to /dev/zero", "zero.toml"),
    ]:
        cases.append(Case("files: links, FIFOs, directories", kind + " (by name)", ["build", f"specs/{name}", "--jobs", "1"], links(kind)))

    def duplicates(kind):
        def setup(project: Path, sentinel: Path) -> None:
            write(project / "specs" / "a.toml", render())
            if kind == "same name in two files":
                write(project / "specs" / "b.toml", render())
            elif kind == "same name in two directories":
                write(project / "more" / "a.toml", render())
            elif kind == "names differing in case":
                write(project / "specs" / "b.toml", render({("", "name"): '"Tiny"'}))

        return setup

    cases += [
        Case("files: duplicates", "same name in two files", ["build", "specs"], duplicates("same name in two files")),
        Case("files: duplicates", "same name in two directories", ["build", "specs", "more"], duplicates("same name in two directories")),
        Case("files: duplicates", "names differing in case", ["build", "specs"], duplicates("names differing in case"), compiles=True),
        Case(
            "files: duplicates",
            "one file given twice",
            ["build", "specs/a.toml", "specs/a.toml", "--jobs", "1"],
            duplicates(""),
            compiles=True,
        ),
        Case(
            "files: duplicates",
            "a file and its directory",
            ["build", "specs", "specs/a.toml", "--jobs", "1"],
            duplicates(""),
            compiles=True,
        ),
    ]
    return cases


def valid_tuning(measured: dict, gpu: str) -> dict:
    sys.path.insert(0, str(REPO))
    from fusegen.spec import parse_spec
    from fusegen.tuning import problem_key

    hints = {
        "variant": "fragment",
        "block_m": 1,
        "threads": 32,
        "blk_k": "auto",
        "prefetch": "auto",
        "joint_reduction": "auto",
        "blocks_per_sm": "auto",
        "ring_slots": "auto",
    }
    buckets = [
        {
            "first_tokens": first,
            "last_tokens": last,
            "measured_at": at,
            "hints": hints,
            "median_us": 2.0,
            "planner_median_us": 2.0,
            "candidates": 1,
        }
        for first, last, at in ((1, 64, 8), (65, 1024, 256), (1025, None, 16384))
    ]
    key = problem_key(parse_spec(render(), "spec.toml"))
    return {"format": 1, "problems": {key: {"gpus": {gpu: {"measured": measured, "buckets": buckets}}}}}


HOSTILE = [
    '"',
    "'''",
    '"""',
    "\\",
    "\n" + MARKER + " = 1\n#",
    '"""\n' + MARKER + ' = 1\n"""',
    "'\n" + MARKER + "()\n'",
    "\r" + MARKER + " = 1",
    "\u2028" + MARKER + " = 1",
    "*/ " + MARKER + " /*",
    "${" + MARKER + "}",
    "\x00",
    "a" * 10000,
]


def tuning_cases() -> list[Case]:
    def with_tuning(data: str | bytes | None, kind: str = "file"):
        def setup(project: Path, sentinel: Path) -> None:
            write(project / "specs" / "spec.toml", render())
            if kind == "directory":
                (project / "tuning.json").mkdir()
            elif kind == "FIFO":
                os.mkfifo(project / "tuning.json")
            elif kind == "loop":
                os.symlink("tuning.json", project / "tuning.json")
            elif data is not None:
                write(project / "tuning.json", data)

        return setup

    argv = ["build", "specs", "--jobs", "1"]
    cases = []
    for label, data in [
        ("not JSON", "tuning"),
        ("empty", ""),
        ("[ × 100000", "[" * 100000),
        ("{ × 100000", '{"a":' * 100000),
        ("a list", "[]"),
        ("null", "null"),
        ("format 2", '{"format": 2, "problems": {}}'),
        ("problems a list", '{"format": 1, "problems": []}'),
        ("binary", bytes(range(256))),
        ("UTF-16", '{"format": 1, "problems": {}}'.encode("utf-16")),
        ("huge number", '{"format": 1' + "0" * 100000 + ', "problems": {}}'),
        ("NaN", '{"format": NaN, "problems": {}}'),
    ]:
        cases.append(Case("tuning.json: damaged", label, argv, with_tuning(data)))
    for kind in ("directory", "FIFO", "loop"):
        cases.append(Case("tuning.json: damaged", f"tuning.json is a {kind}", argv, with_tuning(None, kind)))
    good = valid_tuning({"date": "2026-01-01", "commit": "abc1234"}, "NVIDIA H200")
    for label, change in [
        ("bucket missing", lambda b: b.pop(1)),
        ("threads a string", lambda b: b[0]["hints"].__setitem__("threads", "32")),
        ("threads 0", lambda b: b[0]["hints"].__setitem__("threads", 0)),
        ("threads 33", lambda b: b[0]["hints"].__setitem__("threads", 33)),
        ("threads 1e9", lambda b: b[0]["hints"].__setitem__("threads", 10**9)),
        ("variant unknown", lambda b: b[0]["hints"].__setitem__("variant", "fast")),
        ("block_m 1000", lambda b: b[0]["hints"].__setitem__("block_m", 1000)),
        ("overlapping buckets", lambda b: b[1].__setitem__("first_tokens", 3)),
        ("extra key", lambda b: b[0].__setitem__("evil", 1)),
        ("median negative", lambda b: b[0].__setitem__("median_us", -1)),
        ("ring_slots 1000", lambda b: b[0]["hints"].__setitem__("ring_slots", 1000)),
        ("stream at 32 threads", lambda b: b[0]["hints"].__setitem__("variant", "stream")),
        ("rows sharing threads at one row", lambda b: b[0]["hints"].__setitem__("rows_share_threads", True)),
    ]:
        data = json.loads(json.dumps(good))
        change(data["problems"][next(iter(data["problems"]))]["gpus"]["NVIDIA H200"]["buckets"])
        cases.append(Case("tuning.json: wrong schema", label, argv, with_tuning(json.dumps(data))))
    # Each accepted case compiles: every string goes into commit, a few into date and the GPU name.
    for index, text in enumerate(HOSTILE):
        for key in ("commit", "date") if index % 3 == 0 else ("commit",):
            cases.append(
                Case(
                    "tuning.json: hostile strings",
                    f"{key} = {ascii(text)[:40]}",
                    argv,
                    with_tuning(json.dumps(valid_tuning({"date": "2026-01-01", "commit": "abc", key: text}, "NVIDIA H200"))),
                    compiles=True,
                )
            )
        if index % 3 != 1 or "\x00" in text:
            continue  # and an argument cannot hold NUL
        cases.append(
            Case(
                "tuning.json: hostile strings",
                f"gpu = {ascii(text)[:40]}",
                argv + ["--gpu", text],
                with_tuning(json.dumps(valid_tuning({"date": "2026-01-01", "commit": "abc"}, text))),
                compiles=True,
            )
        )
    cases.append(
        Case("tuning.json: damaged", "--tuning names a missing file", argv + ["--tuning", "nowhere.json"], with_tuning(None), compiles=True)
    )
    return cases


def journal_cases() -> list[Case]:
    def with_journal(entries):
        def setup(project: Path, sentinel: Path) -> None:
            write(project / "specs" / "spec.toml", render())
            (project / "generated").mkdir()
            data = entries(project, sentinel) if callable(entries) else entries
            write(project / "generated" / ".journal.json", data if isinstance(data, (str, bytes)) else json.dumps(data))

        return setup

    argv = ["build", "specs", "--jobs", "1"]
    # Every path here resolves inside the case's temporary root: the corpus must never reach further.
    journals = [
        ("not JSON", "{"),
        ("empty", ""),
        ("a list", "[]"),
        ("moves missing", {"remove": [], "staging": "x"}),
        ("move source ..", {"moves": [["../../sentinel/keep.txt", "stolen.txt"]], "remove": [], "staging": ".staging-x"}),
        ("move target ..", {"moves": [["a", "../../sentinel/keep.txt"]], "remove": [], "staging": ".staging-x"}),
        ("remove ..", {"moves": [], "remove": ["../../sentinel"], "staging": ".staging-x"}),
        ("remove absolute", lambda p, s: {"moves": [], "remove": [str(s / "keep.txt")], "staging": ".staging-x"}),
        ("staging ..", {"moves": [], "remove": [], "staging": "../../sentinel"}),
        ("staging absolute", lambda p, s: {"moves": [], "remove": [], "staging": str(s)}),
        ("move absolute target", lambda p, s: {"moves": [["x", str(s / "keep.txt")]], "remove": [], "staging": ".staging-x"}),
        ("entries of wrong types", {"moves": 5, "remove": {"a": 1}, "staging": None}),
    ]
    return [Case("generated/.journal.json", label, argv, with_journal(entries), compiles=True) for label, entries in journals]


def out_cases() -> list[Case]:
    def project_with(kind):
        def setup(project: Path, sentinel: Path) -> None:
            write(project / "specs" / "spec.toml", render())
            if kind == "file":
                write(project / "outfile", "user data\n")
            elif kind == "read-only":
                (project / "ro").mkdir()
                os.chmod(project / "ro", 0o555)
            elif kind == "user dir named like the kernel":
                write(project / "generated" / "tiny" / "notes.txt", "my notes\n")
                write(project / "generated" / "tiny" / "__init__.py", "# my own package\n")
            elif kind == "package named like the kernel":
                write(project / "specs" / "spec.toml", render({("", "name"): '"mypkg"'}))
                write(project / "mypkg" / "__init__.py", "VALUE = 1\n")
                write(project / "mypkg" / "core.py", "print('mine')\n")

        return setup

    return [
        Case("--out", "--out is a file", ["build", "specs", "--out", "outfile"], project_with("file"), out="outfile"),
        Case("--out", "--out under a file", ["build", "specs", "--out", "outfile/sub"], project_with("file"), out="outfile/sub"),
        Case(
            "--out",
            "--out read-only (root ignores modes)",
            ["build", "specs", "--out", "ro", "--jobs", "1"],
            project_with("read-only"),
            out="ro",
            compiles=True,
        ),
        Case(
            "--out",
            "existing user dir named like the kernel",
            ["build", "specs", "--jobs", "1"],
            project_with("user dir named like the kernel"),
            compiles=True,
        ),
        Case(
            "--out",
            "--out . with a spec named like a package",
            ["build", "specs", "--out", ".", "--jobs", "1"],
            project_with("package named like the kernel"),
            out=".",
            compiles=True,
        ),
        Case("--out", "--out empty string", ["build", "specs", "--out", ""], project_with(""), out="", compiles=True),
    ]


def cli_cases() -> list[Case]:
    def spec(project: Path, sentinel: Path) -> None:
        write(project / "specs" / "spec.toml", render())

    argvs = [
        ["build", "specs", "--jobs", "0"],
        ["build", "specs", "--jobs", "-1"],
        ["build", "specs", "--jobs", "abc"],
        ["build", "specs", "--jobs", ""],
        ["build", "specs", "--jobs", "1e3"],
        ["build", "nowhere.toml"],
        ["build", "nowhere/"],
        ["build"],
        [],
        ["frobnicate"],
        ["build", "specs", "--gpu", ""],
        ["plan", "nowhere.toml"],
        ["plan", "specs"],
        ["plan"],
        ["plan", "specs/spec.toml", "--tuning", "specs"],
        ["build", "/dev/null"],
        ["plan", "/dev/null"],
        ["build", "specs", "--bogus"],
        ["bench", "specs", "--tokens", "0"],
        ["bench", "specs", "--tokens", "-1"],
        ["bench", "specs", "--tokens", "x"],
        ["bench", "nowhere.toml"],
        ["tune", "specs", "--jobs", "0"],
        ["tune", "nowhere.toml"],
        ["record", "nowhere.md", "results"],
        ["record"],
        ["plot", "nowhere"],
    ]
    return [Case("CLI arguments", " ".join(argv) or "(no arguments)", argv, spec) for argv in argvs]


def record_cases() -> list[Case]:
    section = "<!-- fusegen bench results: results -->\nold\n<!-- end of fusegen bench results -->\n"
    row = {
        "kernel": "k",
        "tokens": 1,
        "impl": "fusegen",
        "median_us": 1.0,
        "p10_us": 1.0,
        "p90_us": 1.0,
        "ledger_bytes": 10,
        "tb_per_s": 1.0,
        "host_us_per_call": None,
        "schedule": "",
    }
    good = {"environment": {"gpu": "G", "date": "2026-01-01"}, "copy_tb_per_s": 4.0, "rows": [row]}

    def variant(**changes):
        data = json.loads(json.dumps(good))
        for key, value in changes.items():
            if key.startswith("row_"):
                data["rows"][0][key[4:]] = value
            else:
                data[key] = value
        return json.dumps(data)

    inputs = [
        ("not JSON", "{", section),
        ("empty", "", section),
        ("[ × 100000", "[" * 100000, section),
        ("a list", "[]", section),
        ("rows missing", json.dumps({"environment": {}, "copy_tb_per_s": 4.0}), section),
        ("rows a string", variant(rows="x"), section),
        ("row with an unknown key", json.dumps({**good, "rows": [{**row, "extra": 1}]}), section),
        ("row missing a key", json.dumps({**good, "rows": [{k: v for k, v in row.items() if k != "median_us"}]}), section),
        ("median a string", variant(row_median_us="fast"), section),
        ("median zero", variant(row_median_us=0), section),
        ("ceiling a string", variant(copy_tb_per_s="4"), section),
        ("environment a list", variant(environment=[1]), section),
        ("binary", bytes(range(256)), section),
        ("no section in the markdown", json.dumps(good), "# nothing here\n"),
        ("markdown not UTF-8", json.dumps(good), b"\xff\xfe" + section.encode()),
        ("hostile kernel name", variant(row_kernel="| x |\n<script>"), section),
    ]
    cases = []
    for label, bench, markdown in inputs:

        def setup(project: Path, sentinel: Path, bench=bench, markdown=markdown) -> None:
            write(project / "results" / "bench.json", bench)
            write(project / "BENCHMARKS.md", markdown)

        # The markdown file and the plot are what these commands exist to write.
        cases.append(
            Case("record and plot: bench.json", f"record: {label}", ["record", "BENCHMARKS.md", "results"], setup, out="BENCHMARKS.md")
        )
        cases.append(Case("record and plot: bench.json", f"plot: {label}", ["plot", "results"], setup, out="results/bench.png"))

    def directory(project: Path, sentinel: Path) -> None:
        (project / "results" / "bench.json").mkdir(parents=True)
        write(project / "BENCHMARKS.md", section)

    cases.append(
        Case(
            "record and plot: bench.json",
            "record: bench.json is a directory",
            ["record", "BENCHMARKS.md", "results"],
            directory,
            out="BENCHMARKS.md",
        )
    )
    return cases


def corpus(seed: int) -> list[Case]:
    rng = random.Random(seed)
    return spec_cases(rng) + file_cases() + tuning_cases() + journal_cases() + out_cases() + cli_cases() + record_cases()


def snapshot(root: Path) -> dict[str, tuple]:
    """Every path under root (links not followed, FIFOs not opened): its kind and, for files, a digest."""
    seen = {}
    for directory, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            path = Path(directory) / name
            info = path.lstat()
            if stat.S_ISREG(info.st_mode):
                try:
                    digest = hashlib.sha256(path.read_bytes()).hexdigest()
                except OSError:
                    digest = "unreadable"
                seen[str(path.relative_to(root))] = ("file", digest, name == "__init__.py" and _marked(path))
            elif stat.S_ISLNK(info.st_mode):
                seen[str(path.relative_to(root))] = ("link", os.readlink(path))
            else:
                seen[str(path.relative_to(root))] = (stat.filemode(info.st_mode)[0], "")
    return seen


def may_write(path: str, out: str | None, before: dict) -> bool:
    """Whether the command may have created, changed or deleted `path` (relative to the root): inside
    --out, and not a file that was there before in a directory fusegen did not generate."""
    if out is None:
        return False
    prefix = os.path.normpath(os.path.join("project", out))
    if path != prefix and not path.startswith(prefix + os.sep):
        return False
    if path not in before or path == prefix:
        return True
    inside = os.path.relpath(path, prefix)
    top = inside.split(os.sep)[0]
    if top in (".journal.json", ".lock") or top.startswith(".staging-"):
        return True
    init = path if inside == "__init__.py" else os.path.join(prefix, top, "__init__.py")
    return before.get(init, ("", "", False))[2]


def _marked(init: Path) -> bool:
    try:
        return "generated by fusegen" in init.read_text(encoding="utf-8", errors="replace")[:300]
    except OSError:
        return False


def consistency_problems(out_dir: Path) -> list[str]:
    """What is wrong with an output directory an accepted build left (empty when it is whole)."""
    problems = []
    if not out_dir.is_dir():
        return [f"{out_dir.name}: no output directory"]
    leftovers = [p.name for p in out_dir.iterdir() if p.name == ".journal.json" or p.name.startswith(".staging-")]
    if leftovers:
        problems.append(f"left behind: {leftovers}")
    for kernel in out_dir.iterdir():
        if not kernel.is_dir() or not _marked(kernel / "__init__.py"):
            continue
        for name in GENERATED_FILES + (f"test_{kernel.name}.py",):
            if not (kernel / name).is_file():
                problems.append(f"{kernel.name}/{name} missing")
        for source in kernel.glob("*.py"):
            try:
                tree = ast.parse(source.read_text(encoding="utf-8"))
            except (SyntaxError, ValueError, UnicodeDecodeError) as exc:
                problems.append(f"{kernel.name}/{source.name} does not parse: {exc}")
                continue
            if any(isinstance(node, ast.Name) and node.id == MARKER for node in ast.walk(tree)):
                problems.append(f"{kernel.name}/{source.name}: a hostile string became code ({MARKER})")
        try:
            json.loads((kernel / "plan.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            problems.append(f"{kernel.name}/plan.json unreadable: {exc}")
    return problems


def run_case(case: Case) -> Case:
    root = Path(tempfile.mkdtemp(prefix="fusegen-corpus-"))
    project, sentinel = root / "project", root / "sentinel"
    project.mkdir()
    write(sentinel / "keep.txt", "sentinel\n")
    write(project / "README.txt", "user file\n")
    try:
        case.setup(project, sentinel)
        before = snapshot(root)
        env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
        timeout = COMPILE_TIMEOUT_S if case.compiles else TIMEOUT_S
        try:
            done = subprocess.run([sys.executable, "-m", "fusegen", *case.argv], cwd=project, env=env, capture_output=True, timeout=timeout)
            code, stdout, stderr = done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
        except subprocess.TimeoutExpired as exc:
            code, stdout, stderr = None, (exc.stdout or b"").decode(errors="replace"), (exc.stderr or b"").decode(errors="replace")
        after = snapshot(root)
        changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
        harmful = [p for p in changed if not may_write(p, case.out, before)]
        out_written = [p for p in changed if p not in harmful]
        case.lines = [line for line in (stderr.strip().splitlines() or stdout.strip().splitlines())][:6]
        if harmful:
            case.outcome, case.detail = "harm", f"not its to write: {', '.join(ascii(p) for p in harmful[:5])}"
        elif code is None:
            case.outcome, case.detail = "hang", f"no exit within {timeout} s"
        elif "Traceback (most recent call last)" in stdout + stderr:
            case.outcome, case.detail = "traceback", f"exit {code}"
            output = (stdout + stderr).strip().splitlines()
            case.lines = output[:1] + output[-2:]  # where it started and what was raised
        elif code == 0:
            problems = consistency_problems(project / case.out) if case.argv[:1] == ["build"] and case.out is not None else []
            case.outcome, case.detail = ("harm", "; ".join(problems)) if problems else ("accepted", "")
        elif (
            code == REFUSAL_EXIT
            and any(line.startswith("error:") or ": error:" in line for line in stderr.splitlines())
            and not out_written
        ):
            case.outcome = "clean"
        else:
            case.outcome = "unclean"
            case.detail = f"exit {code}" + (f"; wrote {', '.join(ascii(p) for p in out_written[:3])}" if out_written else "")
    finally:
        for directory, dirs, _files in os.walk(root):
            for name in dirs:
                path = Path(directory) / name
                if not path.is_symlink():
                    os.chmod(path, 0o755)
        shutil.rmtree(root, ignore_errors=True)
    return case


def report(cases: list[Case], seed: int, quick: bool, seconds: float) -> str:
    counts: dict[str, Counter] = {}
    for case in cases:
        counts.setdefault(case.category, Counter())[case.outcome] += 1
    total = Counter(case.outcome for case in cases)
    lines = [
        "# Malformed-input corpus",
        "",
        f"`python scripts/malformed_corpus.py{' --quick' if quick else ''} --seed {seed}`: {len(cases)} cases in {seconds:.0f} s "
        f"(python {sys.version.split()[0]}).",
        "",
        "| category | " + " | ".join(OUTCOMES) + " |",
        "|---|" + "---:|" * len(OUTCOMES),
    ]
    for category, counter in counts.items():
        lines.append(f"| {category} | " + " | ".join(str(counter[o]) for o in OUTCOMES) + " |")
    lines.append("| **all** | " + " | ".join(f"**{total[o]}**" for o in OUTCOMES) + " |")
    for outcome in ("harm", "hang", "traceback", "unclean"):
        listed = [c for c in cases if c.outcome == outcome]
        if not listed:
            continue
        lines += ["", f"## {outcome} ({len(listed)})", ""]
        for case in listed:
            lines.append(
                f"- **{case.category}** — {ascii(case.label)[1:-1][:120]}: `fusegen {ascii(' '.join(case.argv))[1:-1][:100]}`"
                + (f" — {case.detail[:200]}" if case.detail else "")
            )
            lines += [f"    > {ascii(line)[1:-1][:160]}" for line in case.lines[:4]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("report", help="where the markdown report goes")
    parser.add_argument("--quick", action="store_true", help="a small sample (about 40 cases, one compilation)")
    parser.add_argument("--seed", type=int, default=12, help="seed of the generated inputs and of the --quick sample")
    parser.add_argument("--workers", type=int, default=2, help="cases run at once")
    parser.add_argument("--only", help="only categories containing this text")
    args = parser.parse_args(argv)
    print(f"seed {args.seed}", flush=True)
    cases = corpus(args.seed)
    if args.only:
        cases = [c for c in cases if args.only in c.category]
    if args.quick:
        rng = random.Random(args.seed)
        cheap = [c for c in cases if not c.compiles]
        cases = rng.sample(cheap, min(40, len(cheap))) + rng.sample([c for c in cases if c.compiles], 1)
    start = time.monotonic()
    with ThreadPoolExecutor(max(1, args.workers)) as pool:
        for index, case in enumerate(pool.map(run_case, cases), 1):
            if case.outcome != "clean":
                print(f"[{index}/{len(cases)}] {case.outcome:<9} {case.category}: {ascii(case.label)[1:-1][:80]}", flush=True)
    text = report(cases, args.seed, args.quick, time.monotonic() - start)
    Path(args.report).write_text(text, encoding="utf-8")
    fatal = Counter(c.outcome for c in cases if c.outcome in FATAL)
    print(f"{len(cases)} cases: " + ", ".join(f"{o} {sum(c.outcome == o for c in cases)}" for o in OUTCOMES) + f"; report: {args.report}")
    return 1 if fatal else 0


if __name__ == "__main__":
    sys.exit(main())
