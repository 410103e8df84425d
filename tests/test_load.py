"""fusegen.load: a kernel module from a path, TOML text or a KernelSpec, built once per identity into a
per-user cache under a cross-process lock; and `fusegen build --out` output imported under a project's
own package name. Compiles for sm_90a on the CPU (a small kernel, seconds)."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fusegen
from fusegen.emit import program_sources
from fusegen.jit import CacheMiss, generator_digest

REPO = Path(__file__).resolve().parent.parent
SPEC_TEXT = """name = "load_probe"
dtype = "float16"
hidden = 256

[[op]]
kind = "rmsnorm"
eps = {eps}
"""


def spec_text(eps: float) -> str:
    """A fresh eps per test: a new identity, so every test starts from an empty cache entry."""
    return SPEC_TEXT.format(eps=eps)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSEGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("FUSEGEN_NO_COMPILE", raising=False)
    return tmp_path / "cache"


def test_path_text_and_kernel_spec_share_one_build(cache, tmp_path):
    text = spec_text(1e-5)
    path = tmp_path / "probe.toml"
    path.write_text(text)
    heard = []
    from_text = fusegen.load(text, notify=heard.append)
    assert heard == ["compiled load_probe (1/1)"]
    from_path = fusegen.load(path, notify=heard.append)
    from_spec = fusegen.load(fusegen.parse_spec(text, "probe"), notify=heard.append)
    from_str_path = fusegen.load(str(path), notify=heard.append)
    assert heard == ["compiled load_probe (1/1)"]
    assert from_text is from_path is from_spec is from_str_path
    builds = cache / generator_digest()
    assert [p.name for p in builds.iterdir() if p.is_dir()] == [from_text.IDENTITY]
    assert Path(from_text.__file__).parent == builds / from_text.IDENTITY
    sources = program_sources((builds / from_text.IDENTITY / "kernel.cu").read_text())
    assert len(sources) == len(from_text.launcher.programs) and all("__global__" in s for s in sources)
    assert from_text.launcher.op.name().startswith("fusegen::load_probe_")


def test_a_kernel_spec_made_in_python_is_held_to_a_spec_files_rules(cache):
    """KernelSpec.model_validate checks each field; the rules across them (a group dividing the row) are the
    planner's to hold too, or a group of 128 over 1000 columns was built and cached."""
    spec = fusegen.KernelSpec.model_validate(
        {"name": "bad_groups", "dtype": "bfloat16", "hidden": 1000, "op": [{"kind": "rmsnorm"}, {"kind": "quant_fp8", "group_size": 128}]}
    )
    with pytest.raises(
        fusegen.errors.SpecError, match=r"^<KernelSpec>: op\[1\]\.group_size: must be 'token' or a multiple of 8 that divides"
    ):
        fusegen.load(spec)
    assert not cache.exists() or not any(cache.rglob("bad_groups*"))


def test_a_cached_build_is_imported_by_a_new_process_without_compiling(cache):
    text = spec_text(2e-5)
    identity = fusegen.load(text).IDENTITY
    child = (
        "import os, sys, fusegen; os.environ['FUSEGEN_NO_COMPILE'] = '1'\n"
        "module = fusegen.load(sys.stdin.read()); print(module.IDENTITY, module.__name__)"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "FUSEGEN_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-c", child], input=text, capture_output=True, text=True, env=env, cwd="/", timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [identity, "_fusegen_kernel_" + identity.replace("-", "_")]


def test_no_compile_turns_a_miss_into_an_error_naming_spec_and_cache(cache, monkeypatch):
    monkeypatch.setenv("FUSEGEN_NO_COMPILE", "1")
    with pytest.raises(CacheMiss) as caught:
        fusegen.load(spec_text(3e-5))
    message = str(caught.value)
    assert "kernel 'load_probe' (load_probe-" in message
    assert f"is not built in {cache}" in message
    assert "FUSEGEN_NO_COMPILE forbids compiling" in message
    assert not cache.exists() or not any(cache.iterdir())


def test_an_entry_that_does_not_record_its_identity_is_rebuilt(cache):
    text = spec_text(4e-5)
    identity = fusegen.load(text).IDENTITY
    entry = cache / generator_digest() / identity
    reference = entry / "reference.py"
    reference.write_text(reference.read_text().replace(identity, "load_probe-000000000000"))
    # A new process: this one already holds the module.
    child = "import sys, fusegen\nheard = []\nmodule = fusegen.load(sys.stdin.read(), notify=heard.append); print(heard, module.IDENTITY)"
    env = {**os.environ, "PYTHONPATH": str(REPO), "FUSEGEN_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-c", child], input=text, capture_output=True, text=True, env=env, cwd="/", timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"['compiled load_probe (1/1)'] {identity}"
    assert identity in reference.read_text()
    assert [p.name for p in (cache / generator_digest()).iterdir() if p.is_dir()] == [identity]


def _load_in_child(text: str, cache: str, log: str, start) -> None:
    os.environ["FUSEGEN_CACHE_DIR"] = cache
    sys.path.insert(0, str(REPO))
    import fusegen

    start.wait()

    def notify(message: str) -> None:
        with open(log, "a") as handle:
            handle.write(f"{os.getpid()} {message}\n")

    module = fusegen.load(text, notify=notify)
    notify(f"loaded {module.IDENTITY} from {Path(module.__file__).parent}")


def test_two_processes_loading_one_new_spec_build_it_once(cache, tmp_path):
    text = spec_text(5e-5)
    log = tmp_path / "log"
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    children = [context.Process(target=_load_in_child, args=(text, str(cache), str(log), start)) for _ in range(2)]
    for child in children:
        child.start()
    start.set()
    for child in children:
        child.join(timeout=300)
    assert [child.exitcode for child in children] == [0, 0]
    lines = log.read_text().splitlines()
    builds = [line for line in lines if line.endswith("compiled load_probe (1/1)")]
    loads = [line for line in lines if " loaded " in line]
    assert len(builds) == 1, lines
    assert len(loads) == 2, lines
    assert len({line.split(" ", 2)[2] for line in loads}) == 1
    assert [p.name for p in (cache / generator_digest()).iterdir() if p.is_dir()] == [loads[0].split()[2]]


def test_build_out_is_importable_under_a_projects_package_from_any_directory(tmp_path):
    spec = tmp_path / "specs" / "probe.toml"
    spec.parent.mkdir()
    spec.write_text(spec_text(6e-5))
    kernels = tmp_path / "project" / "mypkg" / "kernels"
    kernels.parent.mkdir(parents=True)
    (kernels.parent / "__init__.py").write_text("")
    fusegen.build([spec], kernels, jobs=1)
    child = "import mypkg.kernels.load_probe as k\nprint(k.__name__, k.kernel.__module__, k.reference.__module__, k.launcher.op.name())"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "project"), str(REPO)])}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, env=env, cwd=elsewhere, timeout=300)
    assert done.returncode == 0, done.stderr
    name, kernel_module, reference_module, op = done.stdout.split()
    assert (name, kernel_module, reference_module) == (
        "mypkg.kernels.load_probe",
        "mypkg.kernels.load_probe.kernel",
        "mypkg.kernels.load_probe.reference",
    )
    assert op.startswith("fusegen::load_probe_")


def test_a_build_of_another_fusegen_source_is_not_imported(cache, monkeypatch):
    """A planner or emitter change keeps the version string and the identity, not the kernel: the cache
    keys builds by a digest of fusegen's source too, so a build of the old source is a miss."""
    text = spec_text(7e-6)
    first = fusegen.load(text)
    monkeypatch.delitem(sys.modules, fusegen.jit._module_name(first.IDENTITY))  # as in a new process
    monkeypatch.setattr(fusegen.jit, "generator_digest", lambda: "another-fusegen")
    monkeypatch.setenv("FUSEGEN_NO_COMPILE", "1")
    with pytest.raises(fusegen.CacheMiss):
        fusegen.load(text)
    assert (cache / generator_digest() / first.IDENTITY).is_dir()


def test_the_generator_digest_follows_fusegen_source(tmp_path, monkeypatch):
    package = tmp_path / "fusegen"
    package.mkdir()
    (package / "plan.py").write_text("RULE = 1\n")
    monkeypatch.setattr(fusegen.jit, "__file__", str(package / "jit.py"))
    fusegen.jit.generator_digest.cache_clear()
    before = fusegen.jit.generator_digest()
    (package / "plan.py").write_text("RULE = 2\n")
    fusegen.jit.generator_digest.cache_clear()
    after = fusegen.jit.generator_digest()
    fusegen.jit.generator_digest.cache_clear()
    assert before != after
