"""The model library: every spec in specs/models/ names the model and the module it replaces, plans,
compiles for sm_90a and passes the CUDA checks (CI builds them here rather than committing their
generated files: `fusegen build specs/` reads specs/ only, so the examples' generated/ stays theirs).
tests/test_hf_models.py checks their outputs against the models' own code on the GPU."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from fusegen import checking, testing
from fusegen.checking import cuda_check_failures
from fusegen.emit import render
from fusegen.plan import plan
from fusegen.spec import load_spec

MODELS = sorted((Path(__file__).resolve().parent.parent / "specs" / "models").glob("*.toml"))


def test_the_library_holds_the_models():
    held = {path.stem for path in MODELS}
    assert {"llama-3.1-8b", "deepseek-v3", "gemma-3-12b", "qwen3-8b-q", "qwen3-8b-k", "gemma-3-12b-q"} <= held, held
    assert {"deepseek-v3-mla-kv-a", "deepseek-v3-mla-q-b"} <= held, held


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


@testing.requires_gpu
@pytest.mark.parametrize("tokens", [1, 37, 4096, 16384])
@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_model_spec_matches_its_reference(path, tokens, tmp_path):
    """Each model's kernel as `fusegen build` builds it (launch bounds from ptxas's registers included) against
    its torch reference and the float64 oracle at the issue's token counts (fresh seeded inputs, poisoned
    outputs); tests/test_hf_models.py compares with the models' own code."""
    module = checking.build_staged(load_spec(path)[0], tmp_path)
    checking.run_and_compare(module, tokens)


@pytest.mark.parametrize("stem", ["deepseek-v3-mla-q-b", "deepseek-v3-mla-kv-a"])
def test_mla_gptj_rope_turns_its_pairs_in_registers(stem):
    """DeepSeek MLA's interleaved pairs (2p, 2p+1) lie in one thread's vector at the planner's schedule:
    the RoPE exchanges nothing — no shared span, no barrier, no shuffle — in the plan and in kernel.py."""
    path = next(p for p in MODELS if p.stem == stem)
    p = plan(load_spec(path)[0], str(path))
    (rope,) = (s for s in p.stages if s.kind == "rope")
    assert rope.params["pairing"] == "registers", rope.decisions
    rope_buffers = [b for b in p.primary.scratch if b.owner == f"op[{rope.index}] rope"]
    assert [(b.name, b.scope, b.barrier) for b in rope_buffers] == [("rope_partner", "fragment", False)]
    kernel_py = render(p)["kernel.py"]
    assert "rope_span" not in kernel_py and "T.shfl_xor" not in kernel_py


@pytest.mark.parametrize(
    "stem, rope_dim, through_partner",
    [
        ("qwen3-8b-k", None, False),  # the span is the whole head: every column rotates, no branch
        ("qwen3-8b-k", 64, True),  # half of every head: the rotation branches on the span
    ],
)
def test_per_head_shuffle_goes_before_a_branch_on_the_span_only_where_there_is_one(stem, rope_dim, through_partner):
    """A per-head neox shuffle runs on every lane (mask: all lanes). Where only part of each head
    rotates, TileLang turns the select on the span into a branch, which would keep lanes from the
    shuffle: the shuffle then fills rope_partner first. Where the whole head rotates there is no branch
    and the shuffle stays in the rotation, its CUDA unchanged."""
    path = next(p for p in MODELS if p.stem == stem)
    spec, _ = load_spec(path)
    if rope_dim is not None:
        ops = [op.model_copy(update={"rope_dim": rope_dim}) if op.kind == "rope" else op for op in spec.op]
        spec = spec.model_copy(update={"op": ops})
    p = plan(spec, str(path))
    (rope,) = (s for s in p.stages if s.kind == "rope")
    assert rope.params["pairing"] == "shuffle", rope.decisions
    partner = [b.name for b in p.primary.scratch if b.owner == f"op[{rope.index}] rope"]
    assert partner == (["rope_partner"] if through_partner else [])
    kernel_py = render(p)["kernel.py"]
    assert ("rope_partner[j] = T.shfl_xor(" in kernel_py) == through_partner
    assert (re.search(r"^\s*row\[j\] = .*T\.shfl_xor\(", kernel_py, re.MULTILINE) is None) == through_partner
