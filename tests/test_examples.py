"""The committed example kernels: every spec in specs/ has its generated directory, and the CUDA that
TileLang produced for it passes every check (test_build.py proves the directory is what a build writes)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cases import EXAMPLE_KERNELS

from fusegen.build import display_path, plan_spec
from fusegen.cuda_checks import check_cuda
from fusegen.emit import program_sources
from fusegen.spec import load_spec
from fusegen.tuning import Tuning

ROOT = Path(__file__).resolve().parent.parent
SPECS = sorted((ROOT / "specs").glob("*.toml"))


def test_every_example_kernel_has_a_spec():
    assert {load_spec(path)[0].name for path in SPECS} >= set(EXAMPLE_KERNELS)


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_committed_cuda_passes_the_checks(path):
    spec, text = load_spec(path)
    cuda = ROOT / "generated" / spec.name / "kernel.cu"
    assert cuda.is_file(), f"{path.name} has no generated/{spec.name}/: run `fusegen build specs/`"
    sources = program_sources(cuda.read_text())
    tuned = plan_spec(spec, text, display_path(path), Tuning.load(ROOT / "tuning.json"))
    failures = [f"{c.name}: {c.detail}" for c in check_cuda(tuned, sources) if not c.ok]
    assert not failures, failures


def test_references_run_under_cuda_graph_capture_rules():
    """The bench captures references in CUDA graphs: no host tensor may be created and copied inside them."""
    for reference in (ROOT / "generated").glob("*/reference.py"):
        assert "torch.tensor(" not in reference.read_text(), reference


def tutorial_spec() -> str:
    """The spec the README's tutorial has a newcomer write into specs/deepseek_q.toml."""
    match = re.search(r"`specs/deepseek_q\.toml`:\s*```toml\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert match, "README.md: the tutorial's specs/deepseek_q.toml block is gone"
    return textwrap.dedent(match.group(1))


def test_the_tutorials_spec_in_specs_keeps_the_suite_green(tmp_path):
    """The tutorial's first steps in a copy of the repository — write specs/deepseek_q.toml, `fusegen build
    specs/`, `pytest` — leave every test that reads specs/ or generated/ passing, though the new spec has
    no tuning winners (a user without a GPU cannot tune)."""
    work = tmp_path / "repo"
    for directory in ("specs", "generated", "tests"):
        shutil.copytree(ROOT / directory, work / directory, ignore=shutil.ignore_patterns("__pycache__"))
    for file in ("tuning.json", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / file, work / file)
    (work / "specs" / "deepseek_q.toml").write_text(tutorial_spec())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's fusegen; everything else from the copy

    def run(*args):
        result = subprocess.run([sys.executable, "-m", *args], cwd=work, env=env, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]

    run("fusegen", "build", "specs/", "--jobs", "2")
    run(
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "generated/deepseek_q",
        "tests/test_reference_oracle.py",
        "tests/test_examples.py::test_every_example_kernel_has_a_spec",
        "tests/test_examples.py::test_committed_cuda_passes_the_checks",
        "tests/test_tuning.py::test_committed_tuning_file_is_valid_and_used_by_the_examples",
        "tests/test_build.py::test_fresh_build_matches_committed_tree",
    )
