"""The committed example kernels: every spec in specs/ has its generated directory, and the CUDA that
TileLang produced for it passes every check (test_build.py proves the directory is what a build writes)."""
from __future__ import annotations

from pathlib import Path

import pytest

from fusegen.build import display_path, plan_spec
from fusegen.cuda_checks import check_cuda
from fusegen.emit import program_sources
from fusegen.spec import load_spec
from fusegen.tuning import Tuning

ROOT = Path(__file__).resolve().parent.parent
SPECS = sorted((ROOT / "specs").glob("*.toml"))
SEED_KERNELS = {
    "rms_norm_naive_row_per_block", "rms_norm", "rms_norm_splitk", "layer_norm_fwd",
    "rms_norm_rope_fused", "rms_norm_rope_quant_fused", "rms_norm_rope_quant_fp8_only",
}


def test_every_seed_kernel_has_a_spec():
    assert {load_spec(path)[0].name for path in SPECS} >= SEED_KERNELS


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_committed_cuda_passes_the_checks(path):
    spec, text = load_spec(path)
    sources = program_sources((ROOT / "generated" / spec.name / "kernel.cu").read_text())
    tuned = plan_spec(spec, text, display_path(path), Tuning.load(ROOT / "tuning.json"))
    failures = [f"{c.name}: {c.detail}" for c in check_cuda(tuned, sources) if not c.ok]
    assert not failures, failures


def test_references_run_under_cuda_graph_capture_rules():
    """The bench captures references in CUDA graphs: no host tensor may be created and copied inside them."""
    for reference in (ROOT / "generated").glob("*/reference.py"):
        assert "torch.tensor(" not in reference.read_text(), reference
