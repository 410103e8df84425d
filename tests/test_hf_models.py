"""The model library (specs/models/) against the models' own code: each test builds the Hugging Face
modules a spec replaces, with the model's real config values and random weights, and checks fusegen's
outputs against theirs at 1, 37, 4096 and 16384 tokens (GPU; skipped with the reason without one or
without `transformers`, which the H200 host has).

fusegen's own tolerances compare against its reference, which does fusegen's arithmetic; here the other
side rounds where the model rounds, so each comparison says which roundings differ and allows for them."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch

from fusegen import testing
from fusegen.checking import build_variant
from fusegen.spec import load_spec

MODELS = Path(__file__).resolve().parent.parent / "specs" / "models"
TOKENS = (1, 37, 4096, 16384)
E4M3_MAX = 448.0
# The default amax floor of quant_fp8: a row of zeros still gets a finite scale.
AMAX_FLOOR = 1e-10


def transformers_module(name: str):
    return pytest.importorskip(name, reason="needs Hugging Face transformers (the H200 host has 5.x) to build the model's modules")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    logging.getLogger("tilelang").setLevel(logging.WARNING)
    directory = tmp_path_factory.mktemp("models")
    cache = {}

    def build(file: str):
        if file not in cache:
            cache[file] = build_variant(load_spec(MODELS / file)[0], directory)
        return cache[file]

    return build


def per_token_scale(y: torch.Tensor) -> torch.Tensor:
    """The scale of per-token dynamic e4m3 quantisation as servers compute it (vLLM's scaled_fp8_quant):
    the row's amax / 448."""
    return y.float().abs().amax(dim=-1, keepdim=True).clamp(min=AMAX_FLOOR) / E4M3_MAX


@testing.requires_gpu
@pytest.mark.parametrize("tokens", TOKENS)
def test_llama31_8b_residual_add_rmsnorm_fp8(tokens, built):
    """LlamaDecoderLayer: `hidden_states = residual + hidden_states` in bf16, then LlamaRMSNorm(4096,
    eps=1e-5) with a bf16 weight (the model loaded in bf16), then the per-token FP8 linear's input quant.
    Run in place: residual_out is the residual tensor, as a server updates its stream."""
    llama = transformers_module("transformers.models.llama.modeling_llama")
    module = built("llama-3.1-8b.toml")
    generator = torch.Generator(device="cuda").manual_seed(tokens)
    x = torch.randn(tokens, 4096, generator=generator, device="cuda").to(torch.bfloat16)
    residual = torch.randn(tokens, 4096, generator=generator, device="cuda").to(torch.bfloat16)
    norm = llama.LlamaRMSNorm(4096, eps=1e-5).to(device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        norm.weight.copy_(1.0 + 0.25 * torch.randn(4096, generator=generator, device="cuda"))
        stream = residual + x  # the decoder layer's add, in the stream's dtype
        y = norm(stream)
    want_scale = per_token_scale(y)

    in_place = residual.clone()
    out = module.Outputs(
        **{
            "residual_out": in_place,
            "q": torch.full((tokens, 4096), float("nan"), device="cuda").to(torch.float8_e4m3fn),
            "scale": torch.full((tokens, 1), float("nan"), device="cuda"),
        }
    )
    module.kernel(x, in_place, norm.weight.detach(), out=out)
    torch.cuda.synchronize()

    # bf16 + bf16 is exact in float32 or rounds to the larger operand there, so one rounding to bf16 is
    # the correctly rounded sum on both sides: bit for bit.
    assert torch.equal(out.residual_out, stream)
    # LlamaRMSNorm rounds x·rstd to bf16 and then multiplies by the bf16 weight in bf16 (a second
    # rounding); fusegen rounds x·rstd·w once. So y differs by at most two half-ulps of bf16 (2^-8
    # relative each), the scale (amax / 448) by the same, and a dequantised code by that plus half an e4m3
    # step (2^-4 relative), or half the subnormal step (2^-10 · scale) near zero.
    torch.testing.assert_close(out.scale, want_scale, rtol=2**-7, atol=0)
    assert not torch.isnan(out.q.float()).any(), "q: an element was not written"
    dequantised = out.q.float() * out.scale
    error = (dequantised - y.float()).abs()
    bound = (2**-4 + 2**-7) * y.float().abs() + 2**-10 * out.scale
    assert (error <= bound).all(), f"q·scale off the model's y by up to {(error - bound).max().item():.3g} beyond the bound"
