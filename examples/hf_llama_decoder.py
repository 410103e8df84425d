"""A Hugging Face Llama decoder layer whose residual add + post_attention_layernorm run as one fusegen
kernel, checked against the unpatched layer and timed eager, under torch.compile(fullgraph=True) and in
CUDA graphs (torch.compile's mode="reduce-overhead"), and the replaced part alone against its torch code.

    python examples/hf_llama_decoder.py RESULT.json      (a Hopper GPU, transformers 5.x; no download)

The layer is built from a LlamaConfig with Llama-3.1-8B's sizes and random weights. LlamaDecoderLayer's
forward is `residual + self_attn(input_layernorm(h))`, then `post_attention_layernorm` of that sum, the
MLP, and the second residual add; FusedPostAttention runs the same modules with the first add and the
norm replaced by a kernel of the spec `post_attention_spec` (add_residual → rmsnorm, bf16, hidden 4096,
eps from the config), which returns the sum (residual_out) and the normalised row (y) in one pass."""

from __future__ import annotations

import json
import statistics
import sys

import torch

import fusegen

TOKENS = (1, 8, 256, 4096)
HIDDEN = 4096
# Llama-3.1-8B: every size the layer's GEMMs and attention see, so the timings are the model's own.
LLAMA_31_8B = {
    "hidden_size": HIDDEN,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-5,
    "rope_theta": 500000.0,
    "max_position_embeddings": 8192,
}
# The layer's output is residual + mlp(norm): the sum is bit-identical (both round one float32 add to
# bf16), the norm differs by at most one bf16 step (LlamaRMSNorm rounds x·rstd to bf16 before the weight
# multiply, fusegen rounds x·rstd·w once), and the MLP's two bf16 GEMMs round again. Four bf16 steps
# (2⁻⁶ relative) bound the output's difference, scaled to the output's magnitude for elements near 0.
OUTPUT_TOLERANCE = 2.0**-6


def post_attention_spec(eps: float) -> str:
    """The spec of a Llama layer's residual add → post_attention_layernorm, as TOML text."""
    return "\n".join(
        [
            'name = "llama_post_attention_add_rmsnorm"',
            'dtype = "bfloat16"',
            f"hidden = {HIDDEN}",
            "[[op]]",
            'kind = "add_residual"',
            "[[op]]",
            'kind = "rmsnorm"',
            f"eps = {float(eps)!r}",
            "",
        ]
    )


class FusedPostAttention(torch.nn.Module):
    """A LlamaDecoderLayer's forward with its first residual add and post_attention_layernorm as one kernel
    call; the layer's own modules (and weights) do the rest. Keyword arguments go to self_attn as the
    layer passes them (position_embeddings, attention_mask, ...)."""

    def __init__(self, layer, kernel):
        super().__init__()
        self.layer = layer
        self.kernel = kernel

    def forward(self, hidden_states, **attention_arguments):
        layer = self.layer
        attended, _ = layer.self_attn(hidden_states=layer.input_layernorm(hidden_states), **attention_arguments)
        rows = hidden_states.shape[-1]
        fused = self.kernel(attended.reshape(-1, rows), hidden_states.reshape(-1, rows), layer.post_attention_layernorm.weight)
        return fused.residual_out.view(hidden_states.shape) + layer.mlp(fused.y.view(hidden_states.shape))


def unpatched(layer):
    """The layer as transformers runs it (5.x returns the hidden states; 4.x a tuple holding them)."""

    def forward(hidden_states, **attention_arguments):
        out = layer(hidden_states, **attention_arguments)
        return out[0] if isinstance(out, tuple) else out

    return forward


def ms_per_call(call, calls: int = 50, rounds: int = 7) -> float:
    """GPU milliseconds per call between events around back-to-back calls: the kernels' time where the GPU
    is the bottleneck, and the host's gaps between them where the host is (1 and 8 tokens)."""
    for _ in range(3):
        call()
    samples = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            call()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) / calls)
    return statistics.median(samples)


def build(seed: int = 0):
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

    torch.manual_seed(seed)
    config = LlamaConfig(**LLAMA_31_8B, num_hidden_layers=1, attn_implementation="sdpa")
    layer = LlamaDecoderLayer(config, layer_idx=0).to(device="cuda", dtype=torch.bfloat16).eval()
    with torch.no_grad():  # a trained norm's weight, not the initial ones
        layer.post_attention_layernorm.weight.copy_(1.0 + 0.25 * torch.randn(HIDDEN))
    rotary = LlamaRotaryEmbedding(config=config).to("cuda")
    module = fusegen.load(post_attention_spec(config.rms_norm_eps))
    return layer, rotary, FusedPostAttention(layer, module.kernel)


def layer_inputs(rotary, tokens: int):
    hidden = torch.randn(1, tokens, HIDDEN, device="cuda", dtype=torch.bfloat16)
    positions = torch.arange(tokens, device="cuda").unsqueeze(0)
    return hidden, {"position_embeddings": rotary(hidden, positions), "attention_mask": None}


def bf16_step(values: torch.Tensor) -> torch.Tensor:
    """One bf16 step at each value, float32: 2^(e - 8) for |v| in [2^(e-1), 2^e), the gap above it (the
    larger of its two gaps); 8 significant bits."""
    _, exponent = torch.frexp(values.float())
    return torch.ldexp(torch.ones_like(values, dtype=torch.float32), exponent - 8)


def check(layer, rotary, fused, tokens: int) -> dict:
    """The kernel's outputs against the layer's own add and norm, then the fused layer's output against
    the unpatched layer's (see OUTPUT_TOLERANCE)."""
    hidden, arguments = layer_inputs(rotary, tokens)
    attended, _ = layer.self_attn(hidden_states=layer.input_layernorm(hidden), **arguments)
    residual = hidden.reshape(-1, HIDDEN)
    out = fused.kernel(attended.reshape(-1, HIDDEN), residual, layer.post_attention_layernorm.weight)
    stream = residual + attended.reshape(-1, HIDDEN)
    assert torch.equal(out.residual_out, stream), "the residual sum differs from the layer's"
    norm = layer.post_attention_layernorm(stream)
    assert ((out.y.float() - norm.float()).abs() <= bf16_step(norm)).all(), "the norm differs by more than one bf16 step"

    want = unpatched(layer)(hidden, **arguments)
    got = fused(hidden, **arguments)
    scale = float(want.float().abs().mean())
    torch.testing.assert_close(got, want, rtol=OUTPUT_TOLERANCE, atol=OUTPUT_TOLERANCE * scale)
    return {"max_abs_difference": float((got.float() - want.float()).abs().max()), "mean_abs_output": scale}


def replaced_part(layer):
    """What the kernel replaces, as the layer runs it: the residual add, then post_attention_layernorm."""

    def part(attended, residual):
        stream = residual + attended
        return stream, layer.post_attention_layernorm(stream)

    return part


def main(path: str) -> None:
    layer, rotary, fused = build()
    results = {"torch": torch.__version__, "device": torch.cuda.get_device_name(), "rows": []}
    variants = {
        "eager": unpatched(layer),
        "eager + fusegen": fused,
        "compile": torch.compile(unpatched(layer), fullgraph=True, dynamic=True),
        "compile + fusegen": torch.compile(fused, fullgraph=True, dynamic=True),
        "CUDA graphs": torch.compile(unpatched(layer), fullgraph=True, dynamic=True, mode="reduce-overhead"),
        "CUDA graphs + fusegen": torch.compile(fused, fullgraph=True, dynamic=True, mode="reduce-overhead"),
    }
    parts = {
        "part eager": replaced_part(layer),
        "part compile": torch.compile(replaced_part(layer), fullgraph=True, dynamic=True),
        "part fusegen": lambda attended, residual: fused.kernel(attended, residual, layer.post_attention_layernorm.weight),
    }
    with torch.no_grad():
        for tokens in TOKENS:
            row = {"tokens": tokens, **check(layer, rotary, fused, tokens)}
            hidden, arguments = layer_inputs(rotary, tokens)
            want = variants["eager"](hidden, **arguments)
            scale = float(want.float().abs().mean())
            for label, forward in variants.items():
                got = forward(hidden, **arguments)  # compiled and graphed variants too: the same output
                torch.testing.assert_close(
                    got, want, rtol=OUTPUT_TOLERANCE, atol=OUTPUT_TOLERANCE * scale, msg=lambda m, label=label: f"{label}: {m}"
                )
                # Timed at once, inside this iteration: the defaults bind this iteration's values.
                row[f"{label} ms"] = ms_per_call(lambda forward=forward, hidden=hidden, arguments=arguments: forward(hidden, **arguments))
            attended = layer.self_attn(hidden_states=layer.input_layernorm(hidden), **arguments)[0].reshape(-1, HIDDEN)
            residual = hidden.reshape(-1, HIDDEN)
            for label, part in parts.items():
                row[f"{label} ms"] = ms_per_call(lambda part=part, attended=attended, residual=residual: part(attended, residual))
            results["rows"].append(row)
    for labels in (list(variants), list(parts)):
        print("| tokens | " + " | ".join(f"{label} ms" for label in labels) + " | max abs difference |")
        print("|---:|" + "---:|" * (len(labels) + 1))
        for row in results["rows"]:
            times = " | ".join(f"{row[f'{label} ms']:.3f}" for label in labels)
            print(f"| {row['tokens']} | {times} | {row['max_abs_difference']:.3g} |")
    with open(path, "w") as handle:
        json.dump(results, handle, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
