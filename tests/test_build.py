"""The build's promises: deterministic bytes, all or nothing, safe under concurrency and SIGKILL,
and stale kernels removed only when the build owns them.

Every test works on a copy of the example specs in tmp_path, with the working directory set there
(generated files record spec paths relative to it). One reference build is shared by the module.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import fusegen.build as build_module
from fusegen import cli
from fusegen.build import JOURNAL, LOCK, STAGING_PREFIX, CompileFailure
from fusegen.schedule import PTXAS_SPILL_RELAX_BYTES

REPO = Path(__file__).resolve().parents[1]
KERNEL_NAMES = sorted(p.stem for p in (REPO / "specs").glob("*.toml"))
TIMEOUT = 300
# Seconds after which a build is killed: while it imports, plans, and compiles.
KILL_DELAYS = (0.5, 1.5, 3.0)


# ---------------------------------------------------------------------------------------------------
# Helpers


def snapshot(root: Path, hidden: bool = False) -> dict[str, bytes]:
    """Every file under `root` by relative path; hidden entries (.lock, .staging-*, …) and
    __pycache__ are left out unless `hidden`."""
    files = {}
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(root).parts
        if "__pycache__" in parts or (not hidden and any(part.startswith(".") for part in parts)):
            continue
        if path.is_file():
            files[str(path.relative_to(root))] = path.read_bytes()
    return files


def mtimes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*") if not p.name.startswith(".")}


def fusegen(*args: str, cwd: Path, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "fusegen", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


def build_args(*paths: str, out: str = "generated") -> list[str]:
    return ["build", *paths, "--out", out, "--jobs", "2"]


def ctrl_c_as_in_a_terminal() -> None:
    """A build started from a terminal has Ctrl-C at its default. One that inherits it ignored (a shell's
    background job without job control, nohup: pytest run that way) rightly keeps ignoring it, so the
    Ctrl-C tests would wait out their timeouts and prove nothing (seen in session 20)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_build(*paths: str, cwd: Path, env: dict | None = None) -> subprocess.Popen:
    # Own session, so the build and its compile workers can be killed as one process group.
    return subprocess.Popen(
        [sys.executable, "-m", "fusegen", *build_args(*paths)],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=ctrl_c_as_in_a_terminal,
    )


def status_lines(stdout: str) -> dict[str, str]:
    """Kernel name → 'written' | 'unchanged' from `fusegen build`'s report."""
    lines = [line.split() for line in stdout.splitlines()]
    return {words[0]: words[-1] for words in lines if words and words[-1] in ("written", "unchanged")}


def kernel_dirs(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name != "__pycache__")


def assert_consistent(out: Path) -> None:
    """Each kernel directory is complete and every file in it belongs to one and the same identity;
    no journal or staging directory is left behind."""
    assert not (out / JOURNAL).exists()
    assert not list(out.glob(STAGING_PREFIX + "*"))
    assert (out / "__init__.py").is_file()
    for name in kernel_dirs(out):
        directory = out / name
        files = {p.name for p in directory.iterdir() if p.is_file()}
        assert files == {"__init__.py", "kernel.py", "reference.py", f"test_{name}.py", "plan.json", "kernel.cu"}, name
        identity = json.loads((directory / "plan.json").read_text())["identity"]
        assert identity.startswith(f"{name}-")
        for file, comment in [
            ("kernel.py", "#"),
            ("__init__.py", "#"),
            ("reference.py", "#"),
            (f"test_{name}.py", "#"),
            ("kernel.cu", "//"),
        ]:
            assert (directory / file).read_text().splitlines()[1] == f"{comment} identity: {identity}", (name, file)
        assert f'IDENTITY = "{identity}"' in (directory / "kernel.py").read_text()


def change_eps(spec: Path, eps: str = "2e-6") -> None:
    text = spec.read_text()
    assert "eps = 1e-6" in text
    spec.write_text(text.replace("eps = 1e-6", f"eps = {eps}"))


def identity_of(directory: Path) -> str:
    return json.loads((directory / "plan.json").read_text())["identity"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> tuple[Path, dict[str, bytes]]:
    """A working directory holding specs/, the tuning winners and a fresh generated/ built from them,
    and its files."""
    work = tmp_path_factory.mktemp("reference")
    shutil.copytree(REPO / "specs", work / "specs")
    shutil.copy(REPO / "tuning.json", work / "tuning.json")
    result = fusegen(*build_args("specs/"), cwd=work)
    assert status_lines(result.stdout) == {name: "written" for name in KERNEL_NAMES}
    return work, snapshot(work / "generated")


@pytest.fixture
def work(reference, tmp_path) -> Path:
    """A private copy of the reference working directory (specs/ and its built generated/)."""
    source, _ = reference
    target = tmp_path / "work"
    shutil.copytree(source, target)
    return target


# ---------------------------------------------------------------------------------------------------
# 1. Determinism


def test_fresh_build_matches_committed_tree(reference):
    """The committed generated/ is exactly what building the committed specs/ produces."""
    _, built = reference
    committed = snapshot(REPO / "generated")
    assert sorted(committed) == sorted(built), "generated/ is stale: its file list differs from a fresh build"
    differing = [path for path in built if committed[path] != built[path]]
    assert not differing, f"generated/ is stale; rebuild it with `fusegen build specs/`: {differing}"


def test_rebuild_is_byte_identical_and_writes_nothing(work, reference):
    _, expected = reference
    out = work / "generated"
    before = mtimes(out)
    result = fusegen(*build_args("specs/"), cwd=work)
    assert status_lines(result.stdout) == {name: "unchanged" for name in KERNEL_NAMES}
    assert snapshot(out) == expected
    assert mtimes(out) == before
    # What the bytes depend on besides the specs is named, resolved.
    assert (
        result.stdout.splitlines()[-1]
        == f"{len(KERNEL_NAMES)} kernel(s) in {out}/; tuning: {work / 'tuning.json'} (winners for NVIDIA H200)"
    )
    assert_consistent(out)


def test_bytes_do_not_depend_on_the_locale(work, reference):
    """Generated files are UTF-8 even under an ASCII locale (the headers hold non-ASCII text)."""
    _, expected = reference
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0", "PYTHONIOENCODING": "utf-8"}
    fusegen(*build_args("specs/rms_norm.toml", out="ascii_locale"), cwd=work, env=env)
    built = snapshot(work / "ascii_locale")
    assert built == {path: data for path, data in expected.items() if path.startswith("rms_norm/") or path == "__init__.py"}


@pytest.mark.parametrize("verbose", [False, True])
def test_report_is_not_mixed_with_tilelang_log_and_tells_each_compile(work, tmp_path, verbose):
    """stdout holds only the report; stderr a line as each kernel compiles, and TileLang's log on -v.
    A cold cache makes TileLang log its compilations."""
    env = {**os.environ, "TILELANG_CACHE_DIR": str(tmp_path / "cold-cache")}
    specs = ("specs/rms_norm.toml", "specs/rms_norm_splitk.toml")
    result = fusegen(*build_args(*specs, out="fresh"), *(["-v"] if verbose else []), cwd=work, env=env)
    assert result.stdout.splitlines()[:-1] == [line for line in result.stdout.splitlines() if line.split()[-1] in ("written", "unchanged")]
    assert len(result.stdout.splitlines()) == 3 and "TileLang" not in result.stdout
    compiled = sorted(line.split()[1] for line in result.stderr.splitlines() if line.startswith("compiled "))
    assert compiled == ["rms_norm", "rms_norm_splitk"]
    assert ("TileLang begins to compile kernel" in result.stderr) == verbose


# ---------------------------------------------------------------------------------------------------
# 2. All or nothing


def test_bad_spec_writes_nothing(work):
    out = work / "generated"
    change_eps(work / "specs" / "rms_norm.toml")  # a change a successful build would write
    bad = (work / "specs" / "rms_norm_rope_fused.toml").read_text().replace("rope_dim = 64", "rope_dim = 63")
    (work / "specs" / "zz_bad.toml").write_text(bad.replace('name = "rms_norm_rope_fused"', 'name = "zz_bad"'))
    before = snapshot(out, hidden=True)
    before_mtimes = mtimes(out)

    result = fusegen(*build_args("specs/"), cwd=work, check=False)
    assert result.returncode == 2, result.stderr
    assert "specs/zz_bad.toml" in result.stderr and "op[1].rope_dim" in result.stderr
    assert "nothing written" in result.stderr
    assert snapshot(out, hidden=True) == before
    assert mtimes(out) == before_mtimes

    result = fusegen(*build_args("specs/", out="fresh"), cwd=work, check=False)
    assert result.returncode == 2
    assert not (work / "fresh").exists()


def _sabotage_render(monkeypatch, victim: str) -> None:
    """Makes `victim`'s kernel.py valid Python whose program cannot be built, as if fusegen had
    emitted a kernel TileLang rejects; the real compile workers then fail on it."""
    real_render = build_module.render

    def render(plan):
        files = real_render(plan)
        if plan.name == victim:
            marker = "def program_0():\n"
            files["kernel.py"] = files["kernel.py"].replace(marker, marker + "    raise RuntimeError('injected lowering failure')\n")
        return files

    monkeypatch.setattr(build_module, "render", render)


def test_compile_failure_writes_nothing(work, monkeypatch, capsys):
    out = work / "generated"
    change_eps(work / "specs" / "rms_norm.toml")
    _sabotage_render(monkeypatch, "rms_norm_splitk")
    monkeypatch.chdir(work)
    before = snapshot(out, hidden=True)
    before_mtimes = mtimes(out)

    assert cli.main(build_args("specs/")) == 1
    error = capsys.readouterr().err
    assert "TileLang could not compile 'rms_norm_splitk'" in error and "injected lowering failure" in error
    assert "nothing written" in error
    assert snapshot(out, hidden=True) == before
    assert mtimes(out) == before_mtimes

    with pytest.raises(CompileFailure):
        build_module.build([Path("specs")], Path("fresh"), jobs=2)
    assert list((work / "fresh").iterdir()) == []


@pytest.mark.parametrize(
    "out, why",
    [
        pytest.param("a_file", "--out a_file: is a file", id="file"),
        pytest.param("a_file/generated", "--out a_file/generated: is under a_file, a file", id="under-a-file"),
        pytest.param("read_only/generated", "--out read_only/generated: read_only is not writable", id="read-only"),
    ],
)
def test_unusable_out_is_a_usage_error(work, monkeypatch, capsys, out, why):
    if why.endswith("not writable") and os.geteuid() == 0:
        pytest.skip("root writes into a read-only directory")
    (work / "a_file").write_text("mine\n")
    (work / "read_only").mkdir(mode=0o555)
    monkeypatch.chdir(work)
    assert cli.main(build_args("specs/rms_norm.toml", out=out)) == 2
    error = capsys.readouterr().err
    assert why in error and "Traceback" not in error, error
    assert (work / "a_file").read_text() == "mine\n" and not any((work / "read_only").iterdir())


@pytest.mark.parametrize("jobs", ["0", "-1", "two"])
def test_jobs_below_one_is_refused(capsys, jobs):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["build", "specs/", "--jobs", jobs])
    assert exit_.value.code == 2
    assert f"--jobs: must be a whole number of at least 1, not '{jobs}'" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------
# 3. Concurrency


def test_concurrent_builds_leave_a_consistent_tree(reference, tmp_path):
    """Three builds at once into one empty out dir: two of the same specs, one of a different set
    (a changed rms_norm and a new kernel). Each finishes; every kernel directory is whole."""
    source, expected = reference
    work = tmp_path / "work"
    shutil.copytree(source / "specs", work / "specs")
    shutil.copy(source / "tuning.json", work / "tuning.json")
    (work / "other").mkdir()
    shutil.copy(work / "specs" / "rms_norm.toml", work / "other" / "rms_norm.toml")
    change_eps(work / "other" / "rms_norm.toml")
    extra = (work / "specs" / "rms_norm_splitk.toml").read_text()
    (work / "other" / "extra_kernel.toml").write_text(extra.replace('name = "rms_norm_splitk"', 'name = "extra_kernel"'))

    processes = [start_build("specs/", cwd=work), start_build("specs/", cwd=work), start_build("other/", cwd=work)]
    for process in processes:
        stdout, stderr = process.communicate(timeout=TIMEOUT)
        assert process.returncode == 0, stdout + stderr

    out = work / "generated"
    assert_consistent(out)
    assert kernel_dirs(out) == sorted([*KERNEL_NAMES, "extra_kernel"])
    built = snapshot(out)
    for path, data in expected.items():
        if not path.startswith("rms_norm/"):  # the one kernel both spec sets define: either version may win
            assert built[path] == data, path
    assert json.loads((out / "rms_norm" / "plan.json").read_text())["spec_file"] in ("specs/rms_norm.toml", "other/rms_norm.toml")


def test_a_build_waiting_for_the_lock_says_whose_it_is(tmp_path):
    out = tmp_path / "out"
    heard = []

    def second_build():
        with build_module.locked(out, heard.append):
            heard.append("acquired")

    with build_module.locked(out, heard.append):
        waiter = threading.Thread(target=second_build)
        waiter.start()
        deadline = time.monotonic() + 10
        while not heard and time.monotonic() < deadline:
            time.sleep(0.05)
        assert heard == [f"waiting for the build lock on {out} held by pid {os.getpid()}"]
    waiter.join(10)
    assert heard[-1] == "acquired"


def test_ctrl_c_while_waiting_for_the_lock_leaves_no_staging(work):
    out = work / "generated"
    change_eps(work / "specs" / "rms_norm.toml")
    with build_module.locked(out, lambda message: None):
        process = start_build("specs/rms_norm.toml", cwd=work)
        for line in process.stderr:
            if line.startswith("waiting for the build lock"):
                break
        assert line == f"waiting for the build lock on generated held by pid {os.getpid()}\n"
        os.killpg(process.pid, signal.SIGINT)
        _, stderr = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 130 and "interrupted; nothing written" in stderr and "Traceback" not in stderr, stderr
    assert not list(out.glob(STAGING_PREFIX + "*"))


def _group_gone(group: int, within: float) -> bool:
    """Whether every process of `group` (a build and its compile workers) has ended within `within` s."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def test_compile_workers_ignore_ctrl_c_from_their_first_instruction():
    """A worker that ignored Ctrl-C only once its pool initializer ran printed a traceback when Ctrl-C came
    while it was still importing (seen under load). Spawned inside workers_leave_interrupts_to_us, Python
    starts it with SIGINT ignored; the parent's own handler is back afterwards."""
    import multiprocessing

    from fusegen.compile import workers_leave_interrupts_to_us

    before = signal.getsignal(signal.SIGINT)
    context = multiprocessing.get_context("spawn")
    with workers_leave_interrupts_to_us():
        worker = context.Process(target=signal.raise_signal, args=(signal.SIGINT,))
        worker.start()
    worker.join(timeout=60)
    assert worker.exitcode == 0  # ignored: the worker raised SIGINT at itself and carried on
    assert signal.getsignal(signal.SIGINT) is before


def test_ctrl_c_while_compiling_exits_at_once_and_writes_nothing(work, reference, tmp_path):
    """Ctrl-C reaches the build and its compile workers (one process group, as in a terminal): the build
    stops them rather than waiting for their compilations, and says what it left."""
    _, expected = reference
    out = work / "generated"
    change_eps(work / "specs" / "rms_norm.toml")
    process = start_build("specs/", cwd=work, env={**os.environ, "TILELANG_CACHE_DIR": str(tmp_path / "cold-cache")})
    deadline = time.monotonic() + 60
    while not list(out.glob(f"{STAGING_PREFIX}*/*/kernel.py")) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)  # into the compilations, which take seconds each with a cold cache
    assert process.poll() is None, "the build finished before the interrupt; it would prove nothing"
    os.killpg(process.pid, signal.SIGINT)
    interrupted = time.monotonic()
    _, stderr = process.communicate(timeout=TIMEOUT)
    assert time.monotonic() - interrupted < 5
    assert process.returncode == 130
    assert "interrupted; nothing written" in stderr and "Traceback" not in stderr, stderr
    assert _group_gone(process.pid, within=3.0), subprocess.run(
        ["ps", "-o", "pid,args", "-g", str(process.pid)], capture_output=True, text=True
    ).stdout
    assert snapshot(out) == expected
    assert not list(out.glob(STAGING_PREFIX + "*"))


# ---------------------------------------------------------------------------------------------------
# 4. SIGKILL and the journal


def test_sigkill_leaves_previous_tree_then_next_build_cleans_up(work, reference, tmp_path):
    _, expected = reference
    out = work / "generated"
    change_eps(work / "specs" / "rms_norm.toml")
    for attempt, delay in enumerate(KILL_DELAYS):
        # An empty TileLang cache makes compiling take far longer than `delay`, so the kill always
        # lands while the build plans or compiles, whatever the machine's cache holds.
        env = {**os.environ, "TILELANG_CACHE_DIR": str(tmp_path / f"cold-cache-{attempt}")}
        process = start_build("specs/", cwd=work, env=env)
        time.sleep(delay)
        assert process.poll() is None, f"the build finished within {delay}s; the kill would prove nothing"
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate(timeout=TIMEOUT)
        assert snapshot(out) == expected, f"killed after {delay}s"
        assert not (out / JOURNAL).exists()
    assert list(out.glob(STAGING_PREFIX + "*")), "no kill happened after the build had started staging"

    result = fusegen(*build_args("specs/"), cwd=work)
    assert status_lines(result.stdout) == {name: "written" if name == "rms_norm" else "unchanged" for name in KERNEL_NAMES}
    assert_consistent(out)
    assert json.loads((out / "rms_norm" / "plan.json").read_text())["spec"]["op"][0]["eps"] == 2e-6
    assert {p: d for p, d in snapshot(out).items() if not p.startswith("rms_norm/")} == {
        p: d for p, d in expected.items() if not p.startswith("rms_norm/")
    }


class Killed(BaseException):
    """Stands for SIGKILL inside the test process: nothing after the raise runs."""


def _stage_pending_commit(work: Path, monkeypatch) -> dict:
    """Builds specs/ (rms_norm changed, layer_norm_fwd's spec deleted) until the journal is written,
    then 'dies'. Returns the journal."""
    change_eps(work / "specs" / "rms_norm.toml")
    (work / "specs" / "layer_norm_fwd.toml").unlink()
    real_apply = build_module.apply_journal

    def apply_then_die(out: Path) -> None:
        if (out / JOURNAL).exists():
            raise Killed
        real_apply(out)

    with monkeypatch.context() as patch:
        patch.chdir(work)
        patch.setattr(build_module, "apply_journal", apply_then_die)
        with pytest.raises(Killed):
            build_module.build([Path("specs")], Path("generated"), jobs=2)
    return json.loads((work / "generated" / JOURNAL).read_text())


def _assert_rolled_forward(work: Path, expected_new: dict[str, bytes], old_rms_norm: str) -> None:
    out = work / "generated"
    assert_consistent(out)
    for target, data in expected_new.items():
        assert (out / target).read_bytes() == data, target
    assert identity_of(out / "rms_norm") != old_rms_norm
    assert "layer_norm_fwd" not in kernel_dirs(out)


def test_half_applied_journal_is_rolled_forward(work, monkeypatch):
    """A journal with some moves done by hand (as a kill mid-commit leaves it): the next build, even
    of an unrelated spec, finishes that commit first."""
    out = work / "generated"
    old_rms_norm = identity_of(out / "rms_norm")
    journal = _stage_pending_commit(work, monkeypatch)
    moves = journal["moves"]
    assert journal["remove"] == [f"layer_norm_fwd/{file}" for file in sorted(os.listdir(out / "layer_norm_fwd"))]
    assert {target for _, target in moves} >= {"rms_norm/kernel.py", "rms_norm/kernel.cu", "rms_norm/plan.json"}
    expected_new = {target: (out / source).read_bytes() for source, target in moves}
    for source, target in moves[: len(moves) // 2]:
        os.replace(out / source, out / target)

    result = fusegen(*build_args("specs/rms_norm_splitk.toml"), cwd=work)
    assert f"completed an interrupted build in generated (journal from pid {journal['pid']})" in result.stderr
    _assert_rolled_forward(work, expected_new, old_rms_norm)


def test_mixed_kernel_directory_refuses_to_import(work):
    """What a kill between two moves leaves: kernel.py of a new build beside the rest of the old one.
    Importing it must fail and say what to do, not run a kernel its reference does not describe."""
    from fusegen.compile import import_package

    directory = work / "generated" / "rms_norm"
    assert import_package(directory, "whole_rms_norm").IDENTITY == identity_of(directory)
    kernel = directory / "kernel.py"
    kernel.write_text(kernel.read_text().replace(identity_of(directory), "rms_norm-0123456789ab"))
    with pytest.raises(ImportError, match=r"kernel.py: rms_norm-0123456789ab.*run `fusegen build`"):
        import_package(directory, "mixed_rms_norm")
    (directory / "plan.json").unlink()
    with pytest.raises(ImportError, match="plan.json: missing or unreadable"):
        import_package(directory, "incomplete_rms_norm")


def test_interrupt_while_applying_keeps_what_roll_forward_needs(work, monkeypatch):
    """Ctrl-C in the middle of the moves: the staged files the journal still names must survive the
    unwinding build, so the next one can finish the commit."""
    out = work / "generated"
    old_rms_norm = identity_of(out / "rms_norm")
    change_eps(work / "specs" / "rms_norm.toml")
    (work / "specs" / "layer_norm_fwd.toml").unlink()
    real_replace = os.replace
    calls = []

    def replace_then_interrupt(source, target):
        if Path(target).resolve().is_relative_to(out):
            calls.append(target)
            if len(calls) == 3:  # the journal itself, one move, then the interrupt
                raise KeyboardInterrupt
        real_replace(source, target)

    with monkeypatch.context() as patch:
        patch.chdir(work)
        patch.setattr(build_module.os, "replace", replace_then_interrupt)
        with pytest.raises(KeyboardInterrupt):
            build_module.build([Path("specs")], Path("generated"), jobs=2)
    journal = json.loads((out / JOURNAL).read_text())
    remaining = [(s, t) for s, t in journal["moves"] if (out / s).exists()]
    assert len(remaining) == len(journal["moves"]) - 1
    expected_new = {target: (out / source).read_bytes() for source, target in remaining}

    fusegen(*build_args("specs/rms_norm_splitk.toml"), cwd=work)
    _assert_rolled_forward(work, expected_new, old_rms_norm)


@pytest.mark.parametrize(
    "journal",
    [
        pytest.param("{not json", id="not-json"),
        pytest.param('{"moves": [], "remove": [], "staging": ".staging-1-ab"}', id="no-pid"),
        pytest.param('{"pid": 1, "moves": [], "remove": ["../victim/keep.txt"], "staging": ".staging-1-ab"}', id="dotdot"),
        pytest.param('{"pid": 1, "moves": [], "remove": ["VICTIM/keep.txt"], "staging": ".staging-1-ab"}', id="absolute"),
        pytest.param('{"pid": 1, "moves": [], "remove": ["link/keep.txt"], "staging": ".staging-1-ab"}', id="through-a-link"),
        pytest.param(
            '{"pid": 1, "moves": [[".staging-1-ab/x", "../victim/keep.txt"]], "remove": [], "staging": ".staging-1-ab"}', id="move-out"
        ),
        pytest.param('{"pid": 1, "moves": [["../victim/keep.txt", "rms_norm/x"]], "remove": [], "staging": ".staging-1-ab"}', id="move-in"),
        pytest.param('{"pid": 1, "moves": [], "remove": [], "staging": ".."}', id="staging-dotdot"),
    ],
)
def test_untrusted_journal_is_refused(work, monkeypatch, capsys, journal):
    """A journal is obeyed blindly when it rolls a commit forward: one that is not what a build writes,
    or names a path outside the output directory, stops the build with what to do, touching nothing."""
    out = work / "generated"
    victim = work / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious\n")
    (out / "link").symlink_to(victim)
    (out / JOURNAL).write_text(journal.replace("VICTIM", str(victim)))
    (out / LOCK).unlink()  # the build writes its pid into it
    before = snapshot(work, hidden=True)
    monkeypatch.chdir(work)

    assert cli.main(build_args("specs/rms_norm_splitk.toml")) == 2
    error = capsys.readouterr().err
    assert f"generated/{JOURNAL}: not a journal fusegen wrote" in error and f"delete generated/{JOURNAL}" in error, error
    assert "Traceback" not in error
    assert snapshot(work, hidden=True) == before  # refused before staging: not even the lock file is written


# ---------------------------------------------------------------------------------------------------
# 5. Stale kernels


def test_removed_spec_removes_its_kernel_only_when_its_directory_is_built(work, reference):
    _, expected = reference
    out = work / "generated"
    (work / "specs" / "rms_norm_splitk.toml").unlink()
    (work / "specs" / "layer_norm_fwd.toml").unlink()

    # One spec file built: kernels of other (even deleted) spec files stay.
    result = fusegen(*build_args("specs/rms_norm.toml"), cwd=work)
    assert status_lines(result.stdout) == {"rms_norm": "unchanged"}
    assert snapshot(out) == expected

    # The directory built: the kernels whose specs left it go, the rest is untouched.
    fusegen(*build_args("specs/"), cwd=work)
    assert kernel_dirs(out) == sorted(set(KERNEL_NAMES) - {"rms_norm_splitk", "layer_norm_fwd"})
    assert snapshot(out) == {p: d for p, d in expected.items() if not p.startswith(("rms_norm_splitk/", "layer_norm_fwd/"))}
    assert_consistent(out)


def test_renamed_kernel_replaces_its_old_directory(work):
    out = work / "generated"
    spec = work / "specs" / "rms_norm_splitk.toml"
    spec.write_text(spec.read_text().replace('name = "rms_norm_splitk"', 'name = "rms_norm_splitk_renamed"'))
    fusegen(*build_args("specs/rms_norm_splitk.toml"), cwd=work)
    names = kernel_dirs(out)
    assert "rms_norm_splitk_renamed" in names and "rms_norm_splitk" not in names
    assert len(names) == len(KERNEL_NAMES)
    assert_consistent(out)


def test_build_from_another_directory_removes_no_other_kernel(work):
    """Spec paths are recorded relative to the working directory; from another one they cannot be
    matched, so the kernels of the other specs must be kept, not judged stale."""
    result = fusegen("build", "rms_norm.toml", "--out", "../generated", "--jobs", "2", cwd=work / "specs")
    assert result.stdout.splitlines()[-1].endswith(f"; untuned (no tuning.json in {work / 'specs'})")
    plan = fusegen("plan", "rms_norm.toml", cwd=work / "specs")
    assert plan.stderr == f"untuned (no tuning.json in {work / 'specs'})\n"
    out = work / "generated"
    assert kernel_dirs(out) == KERNEL_NAMES
    assert json.loads((out / "rms_norm" / "plan.json").read_text())["spec_file"] == "rms_norm.toml"
    assert_consistent(out)


@pytest.mark.parametrize(
    "paths",
    [("specs/", "specs/"), ("specs/rms_norm.toml", "specs/rms_norm.toml"), ("specs", "./specs"), ("specs/", "linked/rms_norm.toml")],
)
def test_a_spec_named_twice_is_built_once(work, paths):
    (work / "linked").mkdir()
    (work / "linked" / "rms_norm.toml").symlink_to(work / "specs" / "rms_norm.toml")
    result = fusegen(*build_args(*paths), cwd=work)
    expected = KERNEL_NAMES if paths[0].startswith("specs") and not paths[0].endswith(".toml") else ["rms_norm"]
    assert status_lines(result.stdout) == {name: "unchanged" for name in expected}


@pytest.mark.parametrize("command", ["build", "plan"])
def test_a_named_tuning_file_that_is_missing_is_an_error(work, monkeypatch, capsys, command):
    """Only the default tuning file may be absent (untuned); one named on the command line is meant."""
    monkeypatch.chdir(work)
    before = snapshot(work, hidden=True)
    args = build_args("specs/rms_norm.toml") if command == "build" else ["plan", "specs/rms_norm.toml"]
    assert cli.main([*args, "--tuning", "tunnig.json"]) == 2
    assert "error: --tuning tunnig.json: no such file" in capsys.readouterr().err
    assert snapshot(work, hidden=True) == before


# ---------------------------------------------------------------------------------------------------
# 6. Files fusegen did not write


def _user_package(directory: Path) -> dict[str, bytes]:
    directory.mkdir()
    (directory / "__init__.py").write_text("# my own package\nVALUE = 1\n")
    (directory / "core.py").write_text("def f():\n    return 2\n")
    return snapshot(directory)


def test_spec_named_like_a_package_never_touches_it(work, monkeypatch, capsys):
    """A spec named `fusegen` built with `--out .` meets a user package of that name (fusegen's own
    source, in the issue): the build stops naming it, and writes nothing at all into `.`."""
    monkeypatch.chdir(work)
    package = _user_package(work / "fusegen")
    spec = (work / "specs" / "rms_norm.toml").read_text().replace('name = "rms_norm"', 'name = "fusegen"')
    (work / "fusegen.toml").write_text(spec)
    before = sorted(os.listdir(work))

    assert cli.main(["build", "fusegen.toml", "--out", ".", "--jobs", "1"]) == 2
    error = capsys.readouterr().err
    assert "fusegen: a directory not written by fusegen" in error and "nothing written" in error
    assert snapshot(work / "fusegen") == package
    assert sorted(os.listdir(work)) == before


@pytest.mark.parametrize(
    "in_the_way",
    [
        pytest.param(lambda out: (out / "__init__.py").write_text("# my package\n"), id="package-init"),
        pytest.param(lambda out: (out / "rms_norm" / "kernel.py").write_text("# my kernel\n"), id="kernel-file"),
        pytest.param(lambda out: (out / "rms_norm" / "plan.json").write_text('{"mine": true}'), id="plan-json"),
        pytest.param(lambda out: shutil.rmtree(out / "rms_norm") or (out / "rms_norm").write_text("notes\n"), id="file-named-like-kernel"),
        pytest.param(lambda out: shutil.rmtree(out / "rms_norm") or (out / "rms_norm").symlink_to(out.parent / "specs"), id="symlink"),
    ],
)
def test_a_file_fusegen_did_not_write_stops_the_build(work, monkeypatch, capsys, in_the_way):
    out = work / "generated"
    in_the_way(out)
    change_eps(work / "specs" / "rms_norm.toml")  # a change the build would otherwise write
    before = snapshot(out, hidden=True)
    monkeypatch.chdir(work)

    assert cli.main(build_args("specs/rms_norm.toml")) == 2
    error = capsys.readouterr().err
    assert "generated/" in error and "not written by fusegen" in error and "nothing written" in error
    assert snapshot(out, hidden=True) == before


def test_a_users_file_in_a_kernel_directory_is_kept(work):
    """Extra files in a kernel directory: fusegen's own go, a user's stay, even when the kernel's
    spec is deleted (its directory then keeps only the user's file)."""
    out = work / "generated"
    (out / "rms_norm" / "notes.txt").write_text("mine\n")
    (out / "layer_norm_fwd" / "notes.txt").write_text("mine too\n")
    (work / "specs" / "layer_norm_fwd.toml").unlink()
    change_eps(work / "specs" / "rms_norm.toml")

    fusegen(*build_args("specs/"), cwd=work)
    assert (out / "rms_norm" / "notes.txt").read_text() == "mine\n"
    assert sorted(os.listdir(out / "layer_norm_fwd")) == ["notes.txt"]
    assert identity_of(out / "rms_norm").startswith("rms_norm-")


def test_worker_processes_compile_what_build_committed():
    """bench and tune compile in spawned workers before timing; a worker's CUDA is the committed kernel.cu's."""
    from fusegen.compile import cuda_sources_of_file, in_worker_processes
    from fusegen.emit import program_sources

    kernel_dir = REPO / "generated" / "rms_norm_rope_quant_fp8_only"
    [sources] = in_worker_processes(cuda_sources_of_file, [(kernel_dir / "kernel.py",)], 2)
    assert sources == program_sources((kernel_dir / "kernel.cu").read_text())


def test_a_failed_cuda_check_is_a_failed_build(work, monkeypatch, capsys):
    """A CUDA check that fails means the compiled kernel contradicts its plan: the build says which and
    exits 1, so a script or CI cannot take it for success."""
    import fusegen.build
    from fusegen.cuda_checks import Check

    monkeypatch.setattr(fusegen.build, "check_cuda", lambda plan, sources: [Check("row loads X vectorized", False, "narrowest 4 B")])
    monkeypatch.chdir(work)
    assert cli.main(build_args("specs/rms_norm.toml")) == 1
    printed = capsys.readouterr().out
    assert "✗ row loads X vectorized: narrowest 4 B" in printed and "1 CUDA check(s) failed" in printed


# The planner's stream for this float32 chain holds 56 values a thread and ptxas spills it (perf/probe68's draw).
SPILLING_SPEC = """\
name = "spilling_stream"
dtype = "float32"
hidden = 7168
head_dim = 64

[[op]]
kind = "add_residual"

[[op]]
kind = "rmsnorm"

[[op]]
kind = "rope"
rope_dim = 16
span = "head"
source = "cache"
max_position = 4096

[[op]]
kind = "quant_fp8"
group_size = 64
scale_layout = "column"

[outputs]
y = false
rstd = true

# The planner leaves this row a fragment program (a row that gathers); streamed on 128 threads, 56 values
# a thread, ptxas spills it.
[schedule]
variant = "stream"
threads = 128
"""


def test_the_report_gives_ptxas_registers_and_names_a_spill(work, monkeypatch, capsys):
    """Each kernel's line gives the registers ptxas allotted each program, read from the compiled library;
    a program ptxas spilled gets a line of its own (the build still succeeds: a spill is slower, or for a few
    words cheaper than a block, never wrong), and one that fits gets none."""
    from fusegen.compile import compiled_programs_of_file

    (work / "specs" / "spilling_stream.toml").write_text(SPILLING_SPEC)
    monkeypatch.chdir(work)
    assert cli.main(build_args("specs/rms_norm.toml", "specs/spilling_stream.toml")) == 0
    printed = capsys.readouterr().out
    resources = {
        name: [r for _, r in compiled_programs_of_file(work / "generated" / name / "kernel.py")] for name in ("rms_norm", "spilling_stream")
    }
    for name, found in resources.items():
        assert all(r is not None and 16 <= r.registers <= 255 for r in found), found
        line = next(line for line in printed.splitlines() if line.startswith(name + " "))
        assert f"{'/'.join(str(r.registers) for r in found)} reg" in line
    assert not any(r.stack_bytes for r in resources["rms_norm"])
    spilled = [(index, r) for index, r in enumerate(resources["spilling_stream"]) if r.stack_bytes]
    assert spilled, resources["spilling_stream"]
    for index, r in spilled:
        cost = (
            "correct; a few words, which ran faster than one block fewer"
            if r.stack_bytes < PTXAS_SPILL_RELAX_BYTES
            else "correct, but slower"
        )
        assert f"! program_{index}: ptxas spilled ({r.stack_bytes} B of stack frame at {r.registers} registers a thread): {cost}" in printed
    assert printed.count("ptxas spilled") == len(spilled)


def test_a_tuning_winner_that_spills_is_named_one(work, monkeypatch, capsys):
    """A spill in a program `fusegen tune` chose was timed with the spill: the line says so, and sends the
    reader to no other schedule (the tune timed them)."""
    from fusegen.spec import parse_spec
    from fusegen.tuning import BUCKETS, BucketWinner, GpuWinners, TuningTable, WinnerHints, save_table, with_winners

    untuned = SPILLING_SPEC.split("[schedule]")[0]
    (work / "specs" / "spilling_stream.toml").write_text(untuned)
    streamed = WinnerHints.model_validate({"variant": "stream", "block_m": 1, "threads": 128, "blk_k": "auto", "prefetch": True})
    measured = {"date": "2026-12-06T00:00:00+00:00", "commit": "abc1234"}
    buckets = [
        BucketWinner(
            first_tokens=b.first_tokens,
            last_tokens=b.last_tokens,
            measured_at=b.measured_at,
            hints=streamed,
            median_us=1.0,
            planner_median_us=1.1,
            candidates=3,
        )
        for b in BUCKETS
    ]
    table = with_winners(TuningTable(), parse_spec(untuned, "x.toml"), "Test GPU", GpuWinners(measured=measured, buckets=buckets))
    save_table(work / "tuned.json", table)
    monkeypatch.chdir(work)
    assert cli.main([*build_args("specs/spilling_stream.toml"), "--tuning", "tuned.json", "--gpu", "Test GPU"]) == 0
    spilled = [line for line in capsys.readouterr().out.splitlines() if "ptxas spilled" in line]
    assert spilled and all(line.endswith("correct; a tuning winner, timed as it is, spill and all") for line in spilled), spilled


ADD_QUANT_SPEC = """\
name = "add_quant"
dtype = "float16"
hidden = 1024

[[op]]
kind = "add_residual"

[[op]]
kind = "quant_fp8"
group_size = 128
"""


@pytest.mark.parametrize(
    ("outputs", "ops", "repeated"),
    [
        ({}, ["add_residual", "quant_fp8"], "residual_out"),  # Y by default: the residual add changes the row
        ({"y": True}, ["add_residual", "quant_fp8"], "residual_out"),
        ({"y": False}, ["add_residual", "quant_fp8"], None),
        ({"residual": False}, ["add_residual", "quant_fp8"], None),
        ({}, ["add_residual", "rmsnorm", "quant_fp8"], None),  # Y is the normalised row
        ({}, ["add_residual", "rescale"], None),
    ],
)
def test_y_that_repeats_an_output_is_named(outputs, ops, repeated):
    from fusegen.spec import KernelSpec, repeated_by_y

    spec = {"name": "k", "dtype": "bfloat16", "hidden": 1024, "outputs": outputs, "op": [{"kind": kind} for kind in ops]}
    spec["op"] = [{**op, "factor": 0.5} if op["kind"] == "rescale" else op for op in spec["op"]]
    assert repeated_by_y(KernelSpec.model_validate(spec)) == repeated


@pytest.mark.parametrize(
    ("outputs", "ops", "unobserved"),
    [
        ({"y": False}, ["add_residual", "rope"], [1]),  # the RoPE'd row goes nowhere; residual_out is the sum
        ({"y": False, "residual": False}, ["add_residual", "rmsnorm", "rescale", "quant_fp8"], []),
        ({"y": False, "rstd": True}, ["rmsnorm", "rescale"], [1]),
        ({}, ["add_residual", "rope"], []),  # Y is the RoPE'd row
    ],
)
def test_ops_whose_work_reaches_no_output_are_named(outputs, ops, unobserved):
    from fusegen.spec import KernelSpec, unobserved_ops

    chain = [{"kind": kind} | ({"factor": 0.5} if kind == "rescale" else {"rope_dim": 64} if kind == "rope" else {}) for kind in ops]
    spec = {"name": "k", "dtype": "bfloat16", "hidden": 1024, "outputs": outputs, "op": chain}
    assert unobserved_ops(KernelSpec.model_validate(spec)) == unobserved


ADD_DEAD_ROPE_SPEC = """\
name = "add_dead_rope"
dtype = "bfloat16"
hidden = 1024

[[op]]
kind = "add_residual"

[[op]]
kind = "rope"
rope_dim = 64

[outputs]
y = false
"""


def test_the_build_points_out_y_repeating_residual_out_and_ops_reaching_no_output(work, monkeypatch, capsys):
    """Y and residual_out are one row stored twice when no op after the residual add changes it, and an op after
    the last output is computed for nothing: the build says which key saves it, in which file, and how much (a
    caller may want both tensors, and the kernel's inputs stay the spec's, so it still builds)."""
    (work / "specs" / "add_quant.toml").write_text(ADD_QUANT_SPEC)
    (work / "specs" / "add_dead_rope.toml").write_text(ADD_DEAD_ROPE_SPEC)
    monkeypatch.chdir(work)
    assert cli.main(build_args("specs/rms_norm.toml", "specs/add_quant.toml", "specs/add_dead_rope.toml")) == 0
    printed = capsys.readouterr().out
    assert (
        "note: op[1] (rope) reaches no output (y = false, and it writes nothing of its own): the kernel computes it "
        "for nothing; remove it from specs/add_dead_rope.toml, or set y = true under [outputs]"
    ) in printed
    assert printed.count("reaches no output") == 1
    # `fusegen plan` says the same, under the plan's notes.
    assert cli.main(["plan", "specs/add_dead_rope.toml"]) == 0
    described = capsys.readouterr().out
    assert "\nnotes\n  op[1] (rope) reaches no output (y = false, and it writes nothing of its own)" in described
    # 4096 tokens × 1024 fp16 columns; the fused kernel moves x, residual, residual_out, Y, Q and its scales.
    assert (
        "note: Y repeats residual_out bit for bit (no op after the one writing residual_out changes the row); "
        "`y = false` under [outputs] in specs/add_quant.toml saves 8.4 MB at 4096 tokens, 22% of the kernel's traffic"
    ) in printed
    assert printed.count("note: Y repeats") == 1


STATISTICS_ONLY_SPECS = {
    # rstd comes from x before the weight scales the row, and the row goes nowhere
    "rms_stats": """\
name = "rms_stats"
dtype = "float16"
hidden = 1024

[[op]]
kind = "rmsnorm"

[outputs]
y = false
rstd = true
""",
    # mean and rstd before weight and bias; the RoPE after them is an op reaching no output as well
    "ln_stats": """\
name = "ln_stats"
dtype = "bfloat16"
hidden = 2048

[[op]]
kind = "add_residual"

[[op]]
kind = "layernorm"

[[op]]
kind = "rope"
rope_dim = 64

[outputs]
y = false
mean = true
rstd = true
""",
    # the quantiser writes Q from the normalised row: the weight reaches it
    "rms_stats_quant": """\
name = "rms_stats_quant"
dtype = "float16"
hidden = 1024

[[op]]
kind = "rmsnorm"

[[op]]
kind = "quant_fp8"
group_size = 128

[outputs]
y = false
rstd = true
""",
}


def test_the_build_points_out_a_norm_weight_that_reaches_no_output(work, monkeypatch, capsys):
    """A norm that writes only its statistics, its row reaching no output, takes its weight (and bias) for nothing:
    the build names the keys, the op and the file; where a later op's output carries the row, it says nothing."""
    for name, text in STATISTICS_ONLY_SPECS.items():
        (work / "specs" / f"{name}.toml").write_text(text)
    monkeypatch.chdir(work)
    assert cli.main(build_args(*(f"specs/{name}.toml" for name in STATISTICS_ONLY_SPECS))) == 0
    printed = capsys.readouterr().out
    assert (
        "note: op[0] (rmsnorm): weight reaches no output (y = false, and op[0] writes only rstd, computed before it acts): "
        "the kernel takes it for nothing; set op[0].weight = false in specs/rms_stats.toml"
    ) in printed
    assert (
        "note: op[1] (layernorm): weight and bias reach no output (y = false, and op[1] writes only mean and rstd, computed "
        "before they act): the kernel takes them for nothing; set op[1].weight = false and op[1].bias = false in "
        "specs/ln_stats.toml"
    ) in printed
    assert "note: op[2] (rope) reaches no output" in printed
    # One note for rms_stats, two for ln_stats, none for rms_stats_quant.
    assert printed.count("note:") == 3
    # Taken at their word, the notes leave a spec that builds without them.
    fixed = STATISTICS_ONLY_SPECS["rms_stats"].replace('kind = "rmsnorm"', 'kind = "rmsnorm"\nweight = false')
    (work / "specs" / "rms_stats.toml").write_text(fixed)
    assert cli.main(build_args("specs/rms_stats.toml")) == 0
    assert "note:" not in capsys.readouterr().out


def test_ptxas_resources_needs_a_cubin_with_its_attributes(tmp_path):
    """A file without an embedded cubin, or with bytes that only look like an ELF header, gives None."""
    from fusegen.compile import ptxas_resources

    (tmp_path / "plain.so").write_bytes(b"\x7fELF" + bytes(200))
    (tmp_path / "fake.so").write_bytes(b"\x7fELF" + bytes(60) + b"\x7fELF" + b"\xff" * 80)
    assert ptxas_resources(tmp_path / "plain.so") is None
    assert ptxas_resources(tmp_path / "fake.so") is None
    assert ptxas_resources(tmp_path / "missing.so") is None


def test_a_write_the_file_system_refuses_is_an_error_line_and_nothing_changes(work, monkeypatch, capsys):
    """A full disk (or a quota) while the kernels are written: one error line naming the file and the reason,
    exit 1, and generated/ as it was — the staging directory goes, as on any failure before the journal."""
    before = snapshot(work / "generated", hidden=True)
    change_eps(work / "specs" / "rms_norm.toml")

    def disk_full(plan, staging):
        raise OSError(errno.ENOSPC, "No space left on device", str(staging / plan.name / "kernel.py"))

    monkeypatch.chdir(work)
    monkeypatch.setattr(build_module, "_written", disk_full)
    assert cli.main(build_args("specs")) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith("error: generated/.staging-") and err.rstrip().endswith("kernel.py: No space left on device; nothing written")
    assert snapshot(work / "generated", hidden=True) == before
