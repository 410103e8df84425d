"""The GPU matrix: every case of cases.py against its reference at token counts that reach the size-1,
odd, partial-block and larger-than-L2 paths, from one compilation per program (dynamic token count)."""

from __future__ import annotations

import logging

import pytest
from cases import CASES, PENDING_GPU_CASES, ROUTED, ROUTED_CASES, planner_routed_cases, spec_for

from fusegen import checking, testing
from fusegen.plan import plan
from fusegen.spec import KernelSpec

# 1: a single row; 3: odd, below any block_m; 8: the seed's small M; 255: a partial last block for
# block_m 2 and 4; 4096: the seed's M; 16384: inputs well beyond the 60 MB L2.
TOKENS = (1, 3, 8, 37, 255, 300, 4096, 16384)  # a count in each range the planner routes: ≤ 8, ≤ 64, ≤ 256, ≤ 1024, more
_modules: dict[str, object] = {}


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    logging.getLogger("tilelang").setLevel(logging.WARNING)
    return tmp_path_factory.mktemp("gpu-matrix")


def module_for(name: str, scratch):
    if name not in _modules:
        _modules[name] = checking.build_variant(KernelSpec.model_validate(spec_for(name)), scratch)
    return _modules[name]


def token_counts(name: str) -> tuple[int, ...]:
    pinned = spec_for(name)["tokens"]
    return (pinned,) if pinned else TOKENS


@testing.requires_gpu
# Pending cases run here too: passing here is what moves them into CASES.
@pytest.mark.parametrize(
    "name, tokens", [(name, tokens) for name in sorted({**CASES, **PENDING_GPU_CASES}) for tokens in token_counts(name)]
)
def test_case_matches_reference(name, tokens, scratch):
    checking.run_and_compare(module_for(name, scratch), tokens)


@testing.requires_gpu
@pytest.mark.parametrize("name", sorted(CASES))
def test_each_program_compiled_once_serves_its_token_counts(name, scratch):
    module = module_for(name, scratch)
    for tokens in token_counts(name):
        checking.run_and_compare(module, tokens)
    assert module.launcher.compilations == len(module.launcher.programs)


@testing.requires_gpu
@pytest.mark.parametrize("name", ROUTED_CASES)
def test_routed_programs_each_serve_their_counts(name, scratch):
    module = checking.build_variant(KernelSpec.model_validate(spec_for(name)), scratch / "routed", ROUTED)
    for tokens in (1, 63, 64, 65, 66, 255, 4096):
        checking.run_and_compare(module, tokens)
    assert module.launcher.compilations == 2


@testing.requires_gpu
@pytest.mark.parametrize("name", planner_routed_cases())
def test_planner_routes_each_serve_both_ends_of_their_range(name, scratch):
    module = module_for(name, scratch)
    routes = plan(KernelSpec.model_validate(spec_for(name)), name).routes
    for route in routes:
        for tokens in {route.first_tokens, route.last_tokens or route.first_tokens + 1}:
            checking.run_and_compare(module, tokens)
    assert module.launcher.compilations == len(module.launcher.programs) == len(routes)


@pytest.mark.parametrize("name", planner_routed_cases())
def test_the_matrix_counts_reach_every_program_the_planner_routes(name):
    """A program none of TOKENS reaches is left untested by the matrix, and the one-compilation test above fails
    on the GPU for it: checked here, where planning alone tells."""
    for route in plan(KernelSpec.model_validate(spec_for(name)), name).routes:
        assert any(route.first_tokens <= t <= (route.last_tokens or t) for t in TOKENS), (route.first_tokens, route.last_tokens)
