"""The model library: every spec in specs/models/ names the model and the module it replaces, plans,
compiles for sm_90a and passes the CUDA checks (CI builds them here rather than committing their
generated files: `fusegen build specs/` reads specs/ only, so the examples' generated/ stays theirs).
tests/test_hf_models.py checks their outputs against the models' own code on the GPU."""
from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from fusegen.checking import cuda_check_failures
from fusegen.spec import load_spec

MODELS = sorted((Path(__file__).resolve().parent.parent / "specs" / "models").glob("*.toml"))


def test_the_library_holds_the_models():
    assert [path.name for path in MODELS if path.name.startswith("llama-3.1-8b")], "Llama-3.1-8B's residual add → RMSNorm → FP8"


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_model_spec_says_what_it_replaces(path):
    """The opening comment names the model (its Hugging Face id) and the module the kernel replaces."""
    opening = "".join(line for line in path.read_text().splitlines(keepends=True) if line.startswith("#"))
    assert re.search(r"\([\w.-]+/[\w.-]+\)", opening), f"{path.name}: the opening comment names the model's Hugging Face id"
    assert re.search(r"replaces", opening, re.I), f"{path.name}: the opening comment says which module the kernel replaces"


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_model_spec_compiles_with_clean_cuda(path, tmp_path):
    logging.getLogger("tilelang").setLevel(logging.WARNING)
    failures = cuda_check_failures(load_spec(path)[0], tmp_path)
    assert not failures, failures
