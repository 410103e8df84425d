"""Every malformed spec in tests/spec_errors/ must make `fusegen build` fail the way a person can act on:
exit code 2, exactly one `error:` line naming the file, the line (where it can be known) and the key path
(where one applies), no traceback, nothing written. The full stderr of each case is snapshot-tested
against tests/spec_errors/expected.json; `FUSEGEN_UPDATE_SNAPSHOTS=1 pytest tests/test_spec_errors.py`
rewrites that file after a deliberate change of wording.

Each committed case states where its error must point on its first line:
`# expect: <key path | no key>, line <n | ?> — <what is wrong>`.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import traceback
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fusegen.cli import main
from fusegen.errors import SpecError

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(__file__).resolve().parent / "spec_errors"
CORPUS_REL = CORPUS.relative_to(REPO)
SNAPSHOT = CORPUS / "expected.json"
UPDATE = os.environ.get("FUSEGEN_UPDATE_SNAPSHOTS") == "1"
EXPECT = re.compile(r"# expect: (?P<key>.+), line (?P<line>\d+|\?) — ")

GOOD = 'name = "{name}"\ndtype = "float16"\nhidden = 4096\n\n[[op]]\nkind = "rmsnorm"\neps = 1e-6\n'


@dataclass
class Case:
    name: str
    target: str  # what `fusegen build` is given, relative to the working directory
    shown: str  # how the error message must name the failing file
    key: str | None
    line: int | None
    files: dict[str, bytes] = field(default_factory=dict)  # for generated cases: what to write first


# Cases built at test time, in the same relative folder under a temporary directory: binary content git
# should not carry, sizes not worth committing, file names a checkout should not hold, directories.
_HERE = str(CORPUS_REL)
GENERATED = [
    Case(
        "binary_nul.toml",
        f"{_HERE}/binary_nul.toml",
        f"{_HERE}/binary_nul.toml",
        None,
        1,
        {"binary_nul.toml": b"\x7fELF\x02\x01\x01\x00\x00\x00\nname = 1\n"},
    ),
    Case(
        "too_large.toml",
        f"{_HERE}/too_large.toml",
        f"{_HERE}/too_large.toml",
        None,
        None,
        {"too_large.toml": GOOD.format(name="too_large").encode() + b"# padding\n" * 7000},
    ),
    # The file name carries a fake second error line: the message must escape it and stay one line.
    Case(
        "newline_in_file_name",
        f"{_HERE}/bad\nerror: all good.toml",
        f"{_HERE}/bad\\nerror: all good.toml",
        "name",
        1,
        {"bad\nerror: all good.toml": GOOD.format(name="bad name").encode()},
    ),
    # A dotted key a thousand tables deep: the message shows the table a few levels deep, not a RecursionError.
    Case(
        "nested_1000_levels.toml",
        f"{_HERE}/nested_1000_levels.toml",
        f"{_HERE}/nested_1000_levels.toml",
        "dtype",
        None,
        {"nested_1000_levels.toml": GOOD.format(name="nested").replace('dtype = "float16"', "dtype" + ".a" * 1000 + " = 1").encode()},
    ),
    # Two specs of one name: the second is the error, the first is where the name was taken.
    Case(
        "duplicate_names (directory)",
        f"{_HERE}/dup",
        f"{_HERE}/dup/second.toml",
        "name",
        1,
        {"dup/first.toml": GOOD.format(name="same").encode(), "dup/second.toml": GOOD.format(name="same").encode()},
    ),
]
# Committed cases whose format leaves no room for the `# expect:` line.
NO_HEADER = {"empty.toml": (None, None), "json_not_toml.json": (None, 1)}


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    out: Path


def committed_cases() -> list[Case]:
    cases = []
    for path in sorted(CORPUS.iterdir()):
        if path == SNAPSHOT:
            continue
        target = str(CORPUS_REL / path.name)
        if path.name in NO_HEADER:
            key, line = NO_HEADER[path.name]
        else:
            first = path.read_bytes().removeprefix(b"\xef\xbb\xbf").split(b"\n", 1)[0].decode("utf-8", "replace")
            expect = EXPECT.match(first)
            assert expect, f"{path.name}: first line must be '# expect: <key | no key>, line <n | ?> — <what>'"
            key = None if expect["key"] == "no key" else expect["key"]
            line = None if expect["line"] == "?" else int(expect["line"])
        cases.append(Case(path.name, target, target, key, line))
    return cases


CASES = {case.name: case for case in committed_cases() + GENERATED}


def run_build(target: str, out: Path, cwd: Path) -> Result:
    """`python -m fusegen build` in a fresh interpreter: the real command, exit code and streams."""
    done = subprocess.run(
        [sys.executable, "-m", "fusegen", "build", target, "--out", str(out)],
        cwd=cwd,
        # This checkout's fusegen, whatever the working directory (an installed one may be another checkout).
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    return Result(done.returncode, done.stdout, done.stderr, out)


def run_main(target: str, out: Path, cwd: Path) -> Result:
    """The same command through `fusegen.cli.main` in this process: ~100x faster than an interpreter per
    case. An exception escaping main is printed as the traceback a user would see, and fails the case."""
    stdout, stderr = io.StringIO(), io.StringIO()
    previous = Path.cwd()
    os.chdir(cwd)  # the CLI names files relative to the working directory
    try:
        with redirect_stdout(stdout), redirect_stderr(stderr):
            try:
                code = main(["build", target, "--out", str(out)])
            except SystemExit as exc:
                code = exc.code
            except BaseException:
                traceback.print_exc()
                code = 1
    finally:
        os.chdir(previous)
    return Result(code, stdout.getvalue(), stderr.getvalue(), out)


@pytest.fixture(scope="session")
def workdir(tmp_path_factory) -> Path:
    """Where the generated cases live, under the same relative folder as the committed ones."""
    root = tmp_path_factory.mktemp("generated_cases")
    for case in GENERATED:
        for relative, data in case.files.items():
            path = root / CORPUS_REL / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    return root


@pytest.fixture(scope="session")
def results(tmp_path_factory, workdir) -> dict[str, Result]:
    outs = tmp_path_factory.mktemp("outs")
    found = {
        case.name: run_main(case.target, outs / f"case{number}", workdir if case.files else REPO)
        for number, case in enumerate(CASES.values())
    }
    if UPDATE:
        snapshot = {name: found[name].stderr for name in sorted(found)}
        SNAPSHOT.write_text(json.dumps(snapshot, indent=2, ensure_ascii=False) + "\n")
    return found


@pytest.fixture(scope="session")
def expected(results) -> dict[str, str]:
    return json.loads(SNAPSHOT.read_text())


def test_corpus_is_big_enough():
    assert len(CASES) >= 45


@pytest.mark.parametrize("name", list(CASES))
def test_bad_spec_is_reported_for_people(name, results, expected):
    case, result = CASES[name], results[name]
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    prefix = f"error: {case.shown}" + (f":{case.line}" if case.line else "") + ":" + (f" {case.key}:" if case.key else "")
    assert errors[0].startswith(prefix + " "), f"expected the message to start with {prefix!r}:\n{errors[0]}"
    assert not result.out.exists() or not any(result.out.iterdir()), "a failed build wrote into the output directory"
    assert result.stderr == expected.get(name), "message changed: rerun with FUSEGEN_UPDATE_SNAPSHOTS=1 if deliberate"


def test_snapshot_has_no_stale_cases(expected):
    assert set(expected) == set(CASES)


def test_directory_mixing_good_and_bad_specs_writes_nothing(tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "a_good.toml").write_text(GOOD.format(name="good_kernel"))
    (specs / "b_bad.toml").write_text(GOOD.format(name="bad_kernel").replace("eps = 1e-6", "eps = 0.0"))
    (specs / "c_good.toml").write_text(GOOD.format(name="other_good_kernel"))
    (specs / "d_bad.toml").write_text(GOOD.format(name="worse_kernel").replace("hidden = 4096", "hidden = 4095\nhidden = 1"))
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("untouched")
    result = run_build("specs", out, tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    # One error per bad file, so a user fixes them all in one round.
    assert [e.split(":", 2)[1].strip() for e in errors] == ["specs/b_bad.toml", "specs/d_bad.toml"]
    assert sorted(p.name for p in out.rglob("*")) == ["keep.txt"]
    assert (out / "keep.txt").read_text() == "untouched"


# One case of each family again through a fresh interpreter, as a user runs it: the same stderr.
SUBPROCESS_SAMPLE = [
    "toml_unclosed_string.toml",
    "unknown_key_top_typo.toml",
    "kind_unknown.toml",
    "rope_dim_odd.toml",
    "schedule_splitk_fused.toml",
    "name_cyrillic.toml",
    "not_utf8.toml",
    "newline_in_file_name",
    "duplicate_names (directory)",
]


@pytest.mark.parametrize("name", SUBPROCESS_SAMPLE)
def test_real_command_line(name, tmp_path, workdir, expected):
    case = CASES[name]
    result = run_build(case.target, tmp_path / "out", workdir if case.files else REPO)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr == expected[name]
    assert not (tmp_path / "out").exists()


# Paths that are not spec files: each is one error naming the path and what it is, at once (a FIFO must
# not wait for a writer, a link to /dev/zero must not be read), never a traceback.
def _symlink_loop(root: Path) -> str:
    (root / "a.toml").symlink_to("b.toml")
    (root / "b.toml").symlink_to("a.toml")
    return "a.toml"


def _directory_link_loop(root: Path) -> str:
    (root / "specs").symlink_to("specs")
    return "specs"


def _loop_inside_directory(root: Path) -> str:
    (root / "specs").mkdir()
    (root / "specs" / "self.toml").symlink_to("self.toml")
    return "specs"


def _fifo_inside_directory(root: Path) -> str:
    (root / "specs").mkdir()
    os.mkfifo(root / "specs" / "pipe.toml")
    return "specs"


def _fifo(root: Path) -> str:
    os.mkfifo(root / "pipe.toml")
    return "pipe.toml"


def _link_to_dev_zero(root: Path) -> str:
    (root / "zero.toml").symlink_to("/dev/zero")
    return "zero.toml"


def _directory_named_toml(root: Path) -> str:
    (root / "specs" / "inner.toml").mkdir(parents=True)
    return "specs"


NOT_SPEC_FILES = [
    pytest.param(_symlink_loop, "a.toml", "is a loop of symbolic links", id="symlink_loop"),
    pytest.param(_directory_link_loop, "specs", "is a loop of symbolic links", id="directory_link_loop"),
    pytest.param(_loop_inside_directory, "specs/self.toml", "is a loop of symbolic links", id="loop_inside_directory"),
    pytest.param(_fifo_inside_directory, "specs/pipe.toml", "is a named pipe (FIFO), not a regular file", id="fifo_inside_directory"),
    pytest.param(_fifo, "pipe.toml", "is a named pipe (FIFO), not a regular file", id="fifo"),
    pytest.param(_link_to_dev_zero, "zero.toml", "is a character device, not a regular file", id="link_to_dev_zero"),
    pytest.param(_directory_named_toml, "specs/inner.toml", "is a directory, not a regular file", id="directory_named_toml"),
]


@pytest.mark.parametrize("make, shown, message", NOT_SPEC_FILES)
def test_path_that_is_not_a_spec_file(make, shown, message, tmp_path):
    target = make(tmp_path)
    # A fresh interpreter with a time limit: before the fix a FIFO waited for a writer forever.
    result = run_build(target, tmp_path / "out", tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines()[0].startswith(f"error: {shown}: {message}"), result.stderr
    assert not (tmp_path / "out").exists()


def test_unreadable_directory_says_why(tmp_path, monkeypatch):
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "a.toml").write_text(GOOD.format(name="hidden_kernel"))
    listing = os.scandir

    def refuse(path="."):
        if Path(path).name == "specs":
            raise PermissionError(13, "Permission denied", str(path))
        return listing(path)

    # Root reads any directory whatever its mode, so the refusal is simulated.
    monkeypatch.setattr(os, "scandir", refuse)
    result = run_main("specs", tmp_path / "out", tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == "error: specs: cannot be read: Permission denied"


def test_large_file_is_refused_after_reading_one_byte_past_the_limit(tmp_path, monkeypatch):
    from fusegen import spec as spec_module

    big = tmp_path / "big.toml"
    with big.open("wb") as handle:
        handle.truncate(1 << 28)  # sparse: 256 MiB on paper, nothing on disk
    read = []
    real_read = os.read

    def counted_read(descriptor, size):
        data = real_read(descriptor, size)
        read.append(len(data))
        return data

    monkeypatch.setattr(os, "read", counted_read)
    with pytest.raises(SpecError, match=f"is {1 << 28} bytes; a spec is a small TOML file"):
        spec_module.read_spec_text(big)
    assert sum(read) == spec_module.MAX_SPEC_BYTES + 1
