"""The model library (specs/models/) against the models' own code: each test builds the Hugging Face
modules a spec replaces, with the model's real config values and random weights, and checks fusegen's
outputs against theirs at 1, 37, 4096 and 16384 tokens (GPU; skipped with the reason without one or
without `transformers`, which the H200 host has).

fusegen's own tolerances compare against its reference, which does fusegen's arithmetic; here the other
side rounds where the model rounds, so each comparison says which roundings differ and allows for them."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import pytest
import torch

from fusegen import testing
from fusegen.checking import build_staged
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
            cache[file] = build_staged(load_spec(MODELS / file)[0], directory)
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


# --- per-head QK-norm and RoPE, and DeepSeek's MLA rows -------------------------------------------------
# The models' rotary embeddings give cos/sin as (batch, tokens, rotary dim) with the angles repeated in
# both halves (cat(freqs, freqs)); the cache fusegen reads holds each position's cos then sin halves.


def rotary_cache(rotary, max_position: int, rope_dim: int) -> torch.Tensor:
    """(max_position, rope_dim) float32: cos | sin of the model's own rotary embedding at every position."""
    positions = torch.arange(max_position, device="cuda")[None]
    cos, sin = rotary(torch.zeros(1, device="cuda", dtype=torch.float32), positions)
    half = rope_dim // 2
    return torch.cat([cos[0, :, :half], sin[0, :, :half]], dim=-1).float().contiguous()


def config_with_rope(config_class, rope_theta: float, **values):
    """A model config with its real values; transformers 5 reads rope_theta from rope_parameters."""
    config = config_class(**values)
    parameters = dict(getattr(config, "rope_parameters", None) or {})
    parameters.update(rope_type=parameters.get("rope_type", "default"), rope_theta=rope_theta)
    config.rope_parameters = parameters
    config.rope_theta = rope_theta
    return config


def positions_for(tokens: int, max_position: int, generator) -> torch.Tensor:
    positions = torch.randint(0, max_position, (tokens,), generator=generator, device="cuda")
    positions[0] = max_position - 1  # the cache's last row, where an off-by-one shows
    return positions


# The model rounds to bf16 at each step — x·rstd, then ·w (Qwen3; Gemma 3 rounds once after (1 + w)),
# cos and sin, both products of the rotation and their sum — each by up to 2^-9 of its magnitude; fusegen
# rounds once. With unit-scale values (normalised rows, weights near 1) that is at most ~6 · 2^-9 < 2^-6
# of the terms, which are at most a few units: 2^-5 absolute and relative holds with room, while a wrong
# pairing, sign, position or head would be off by O(1).
QK_TOLERANCE = {"atol": 2**-5, "rtol": 2**-5}


def check_qk_norm_rope(module, norm, rotary, rotate, heads: int, head_dim: int, max_position: int, tokens: int):
    generator = torch.Generator(device="cuda").manual_seed(tokens)
    x = torch.randn(tokens, heads * head_dim, generator=generator, device="cuda").to(torch.bfloat16)
    positions = positions_for(tokens, max_position, generator)
    cache = rotary_cache(rotary, max_position, head_dim)
    with torch.no_grad():
        cos, sin = rotary(x, positions[None])  # bf16, as the model runs
        normed = norm(x.view(1, tokens, heads, head_dim)).transpose(1, 2)
        want, _ = rotate(normed, normed, cos, sin)
        want = want.transpose(1, 2).reshape(tokens, heads * head_dim)
    out = module.Outputs(y=torch.full_like(x, float("nan")))
    module.kernel(x, norm.weight.detach(), positions, cache, out=out)
    torch.cuda.synchronize()
    assert not torch.isnan(out.y.float()).any(), "y: an element was not written"
    torch.testing.assert_close(out.y.float(), want.float(), **QK_TOLERANCE)


@testing.requires_gpu
@pytest.mark.parametrize("tokens", TOKENS)
@pytest.mark.parametrize(("file", "heads"), [("qwen3-8b-q.toml", 32), ("qwen3-8b-k.toml", 8)])
def test_qwen3_8b_qk_norm_rope(file, heads, tokens, built):
    """Qwen3Attention: q_norm / k_norm (Qwen3RMSNorm(128, eps=1e-6), bf16 weights) per head, then
    apply_rotary_pos_emb with Qwen3RotaryEmbedding (rope_theta 1e6) at each token's position."""
    qwen3 = transformers_module("transformers.models.qwen3.modeling_qwen3")
    config = config_with_rope(
        qwen3.Qwen3Config,
        1e6,
        hidden_size=4096,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=128,
        rms_norm_eps=1e-6,
        max_position_embeddings=40960,
    )
    generator = torch.Generator(device="cuda").manual_seed(heads)
    norm = qwen3.Qwen3RMSNorm(128, eps=1e-6).to(device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        norm.weight.copy_(1.0 + 0.25 * torch.randn(128, generator=generator, device="cuda"))
    rotary = qwen3.Qwen3RotaryEmbedding(config=config).to("cuda")
    check_qk_norm_rope(built(file), norm, rotary, qwen3.apply_rotary_pos_emb, heads, 128, 40960, tokens)


@testing.requires_gpu
@pytest.mark.parametrize("tokens", TOKENS)
def test_gemma3_12b_q_norm_rope(tokens, built):
    """Gemma3Attention: q_norm (Gemma3RMSNorm(256, eps=1e-6): (1 + w), float32 inside) per head, then
    apply_rotary_pos_emb with the global layers' rotary embedding (rope_theta 1e6)."""
    gemma3 = transformers_module("transformers.models.gemma3.modeling_gemma3")
    from transformers import Gemma3TextConfig

    # The config's own rotary parameters: per layer type in transformers 5, the global (full attention)
    # layers at rope_theta 1e6, the sliding ones at 1e4.
    config = Gemma3TextConfig(
        hidden_size=3840, num_attention_heads=16, num_key_value_heads=8, head_dim=256, rms_norm_eps=1e-6, max_position_embeddings=131072
    )
    generator = torch.Generator(device="cuda").manual_seed(tokens)
    norm = gemma3.Gemma3RMSNorm(256, eps=1e-6).to(device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        norm.weight.copy_(0.25 * torch.randn(256, generator=generator, device="cuda"))
    embedding = gemma3.Gemma3RotaryEmbedding(config=config).to("cuda")

    def rotary(x, positions):
        return embedding(x, positions, "full_attention")

    # The global layers' angles: position 1, pair 1 turns by 1e6^(-2/256).
    cos, _ = rotary(torch.zeros(1, device="cuda"), torch.ones(1, 1, dtype=torch.long, device="cuda"))
    assert abs(cos[0, 0, 1].item() - math.cos(1e6 ** (-2 / 256))) < 1e-6, "not the rope_theta 1e6 rotary embedding"
    check_qk_norm_rope(built("gemma-3-12b-q.toml"), norm, rotary, gemma3.apply_rotary_pos_emb, 16, 256, 131072, tokens)


def deepseek_v3():
    deepseek = transformers_module("transformers.models.deepseek_v3.modeling_deepseek_v3")
    config = deepseek.DeepseekV3Config(
        hidden_size=7168,
        num_attention_heads=128,
        kv_lora_rank=512,
        q_lora_rank=1536,
        qk_rope_head_dim=64,
        qk_nope_head_dim=128,
        v_head_dim=128,
        rms_norm_eps=1e-6,
        max_position_embeddings=163840,
    )
    # DeepSeek-V3's YaRN scaling (config.json): the cache carries its mscale, as the model's cos/sin do.
    yarn = {
        "rope_type": "yarn",
        "rope_theta": 10000.0,
        "factor": 40.0,
        "original_max_position_embeddings": 4096,
        "beta_fast": 32,
        "beta_slow": 1,
        "mscale": 1.0,
        "mscale_all_dim": 1.0,
    }
    config.rope_parameters = yarn
    config.rope_scaling = {key: value for key, value in yarn.items() if key != "rope_theta"} | {"type": "yarn"}
    config.rope_theta = 10000.0
    rotary = deepseek.DeepseekV3RotaryEmbedding(config=config).to("cuda")
    return deepseek, rotary


def interleaved(deinterleaved: torch.Tensor) -> torch.Tensor:
    """transformers' apply_rotary_pos_emb_interleave returns the rotated pairs de-interleaved (all first
    members, then all second); fusegen keeps them in place, (2p, 2p+1), as vLLM does. Same numbers."""
    half = deinterleaved.shape[-1] // 2
    return torch.stack([deinterleaved[..., :half], deinterleaved[..., half:]], dim=-1).flatten(-2)


# The model's rotation runs in bf16 (cos/sin rounded to bf16, two products and a sum), its RMSNorm
# rounds x·rstd before ·w: the same few bf16 roundings as QK_TOLERANCE allows for.
@testing.requires_gpu
@pytest.mark.parametrize("tokens", TOKENS)
def test_deepseek_v3_mla_kv_a(tokens, built):
    """DeepseekV3Attention: kv_a_layernorm (DeepseekV3RMSNorm(512)) on the latent 512 columns of
    kv_a_proj_with_mqa's output, the interleaved RoPE on its last 64 (k_rot, one shared head)."""
    deepseek, rotary = deepseek_v3()
    module = built("deepseek-v3-mla-kv-a.toml")
    generator = torch.Generator(device="cuda").manual_seed(tokens)
    x = torch.randn(tokens, 576, generator=generator, device="cuda").to(torch.bfloat16)
    positions = positions_for(tokens, 163840, generator)
    norm = deepseek.DeepseekV3RMSNorm(512, eps=1e-6).to(device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        norm.weight.copy_(1.0 + 0.25 * torch.randn(512, generator=generator, device="cuda"))
        k_pass, k_rot = torch.split(x, [512, 64], dim=-1)
        cos, sin = rotary(x, positions[None])
        k_rot = k_rot.view(1, 1, tokens, 64)
        _, rotated = deepseek.apply_rotary_pos_emb_interleave(k_rot, k_rot, cos, sin)
        want = torch.cat([norm(k_pass), interleaved(rotated)[0, 0]], dim=-1)
    out = module.Outputs(y=torch.full_like(x, float("nan")))
    module.kernel(x, norm.weight.detach(), positions, rotary_cache(rotary, 163840, 64), out=out)
    torch.cuda.synchronize()
    assert not torch.isnan(out.y.float()).any(), "y: an element was not written"
    torch.testing.assert_close(out.y.float(), want.float(), **QK_TOLERANCE)


@testing.requires_gpu
@pytest.mark.parametrize("tokens", TOKENS)
def test_deepseek_v3_mla_q_b(tokens, built):
    """DeepseekV3Attention: q_b_proj's output viewed as 128 heads of 192, split into 128 pass-through and
    64 rotated columns (q_rot), the interleaved RoPE in every head."""
    deepseek, rotary = deepseek_v3()
    module = built("deepseek-v3-mla-q-b.toml")
    generator = torch.Generator(device="cuda").manual_seed(tokens)
    x = torch.randn(tokens, 128 * 192, generator=generator, device="cuda").to(torch.bfloat16)
    positions = positions_for(tokens, 163840, generator)
    with torch.no_grad():
        q = x.view(1, tokens, 128, 192).transpose(1, 2)
        q_pass, q_rot = torch.split(q, [128, 64], dim=-1)
        cos, sin = rotary(x, positions[None])
        rotated, _ = deepseek.apply_rotary_pos_emb_interleave(q_rot, q_rot, cos, sin)
        want = torch.cat([q_pass, interleaved(rotated)], dim=-1).transpose(1, 2).reshape(tokens, 128 * 192)
    out = module.Outputs(y=torch.full_like(x, float("nan")))
    module.kernel(x, positions, rotary_cache(rotary, 163840, 64), out=out)
    torch.cuda.synchronize()
    assert not torch.isnan(out.y.float()).any(), "y: an element was not written"
    torch.testing.assert_close(out.y.float(), want.float(), **QK_TOLERANCE)
