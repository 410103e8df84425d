"""Every case in cases.py plans, compiles for sm_90a and passes the CUDA checks (no GPU needed).

This pins the planner and emitter rules that the GPU matrix found (and that TileLang's layout
inference would otherwise break): a pinned row layout, masked padding, vector widths."""
from __future__ import annotations

import logging

import pytest

from fusegen.cuda_checks import check_cuda
from fusegen.plan import plan
from fusegen.spec import KernelSpec
from fusegen.testing import build_variant

from cases import CASES, PENDING_GPU_CASES, spec_for


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    logging.getLogger("tilelang").setLevel(logging.WARNING)
    return tmp_path_factory.mktemp("compile-matrix")


@pytest.mark.parametrize("name", sorted({**CASES, **PENDING_GPU_CASES}))
def test_case_compiles_with_clean_cuda(name, scratch):
    import tilelang

    spec = KernelSpec.model_validate(spec_for(name))
    module = build_variant(spec, scratch)
    compiled = tilelang.compile(module.program(), target=module.launcher.target)
    failures = [f"{c.name}: {c.detail}" for c in check_cuda(plan(spec, name), compiled.get_kernel_source()) if not c.ok]
    assert not failures, failures
