"""The pytest side of checking generated kernels: what every generated test calls. The checks themselves
are checking.py's (which `fusegen bench` and `fusegen tune` use without pytest installed)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import torch

from . import checking


def requires_gpu(test):
    """Marks a test as a GPU test (`pytest -m gpu`) and skips it, saying why, where there is no GPU."""
    reason = "needs a CUDA GPU (Hopper, sm_90a); on CPU the suite checks references and compilation instead"
    return pytest.mark.gpu(pytest.mark.skipif(not torch.cuda.is_available(), reason=reason)(test))


def spec_shape_tokens(package: str) -> tuple[int, ...]:
    spec = checking.spec_of(importlib.import_module(package))
    return (spec["tokens"],) if spec.get("tokens") else checking.SPEC_SHAPE_TOKENS


def check_module(package: str, tokens: int) -> None:
    checking.run_and_compare(importlib.import_module(package), tokens)


def check_small_variant(package: str, directory: Path) -> None:
    spec = checking.small_variant(checking.spec_of(importlib.import_module(package)))
    checking.run_and_compare(checking.build_variant(spec, directory), checking.SEED_SMALL["tokens"])
