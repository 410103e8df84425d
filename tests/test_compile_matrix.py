"""Every case in cases.py plans, compiles for sm_90a and passes the CUDA checks (no GPU needed).

This pins the planner and emitter rules that the GPU matrix found (and that TileLang's layout
inference would otherwise break): a pinned row layout, masked padding, vector widths."""
from __future__ import annotations

import logging

import pytest

from fusegen.spec import KernelSpec
from fusegen.testing import cuda_check_failures

from cases import CASES, PENDING_GPU_CASES, ROUTED, ROUTED_CASES, spec_for


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    logging.getLogger("tilelang").setLevel(logging.WARNING)
    return tmp_path_factory.mktemp("compile-matrix")


@pytest.mark.parametrize("name", sorted({**CASES, **PENDING_GPU_CASES}))
def test_case_compiles_with_clean_cuda(name, scratch):
    failures = cuda_check_failures(KernelSpec.model_validate(spec_for(name)), scratch)
    assert not failures, failures


@pytest.mark.parametrize("name", ROUTED_CASES)
def test_routed_programs_each_compile_with_clean_cuda(name, scratch):
    failures = cuda_check_failures(KernelSpec.model_validate(spec_for(name)), scratch / "routed", ROUTED)
    assert not failures, failures
