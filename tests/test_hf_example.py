"""examples/hf_llama_decoder.py runs on the H200; on the CPU its spec is planned and imported, and the
fused layer's wiring is run with the kernel's torch reference standing in for the kernel."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

from fusegen.checking import build_variant
from fusegen.spec import parse_spec

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "hf_llama_decoder.py"


def example():
    spec = importlib.util.spec_from_file_location("hf_llama_decoder", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # imports torch and fusegen only: transformers is imported by main()
    return module


class StandInLayer(torch.nn.Module):
    """The four modules a LlamaDecoderLayer's forward uses, small enough for the CPU."""

    def __init__(self, hidden: int):
        super().__init__()
        self.input_layernorm = torch.nn.Identity()
        self.post_attention_layernorm = torch.nn.Module()
        self.post_attention_layernorm.weight = torch.nn.Parameter(1.0 + 0.25 * torch.randn(hidden, dtype=torch.bfloat16))
        self.mlp = torch.nn.Linear(hidden, hidden, bias=False, dtype=torch.bfloat16)

    def self_attn(self, hidden_states, position_embeddings, attention_mask):
        return hidden_states * position_embeddings, None


def test_the_spec_takes_the_configs_eps_and_the_kernel_the_layers_tensors(tmp_path):
    hf = example()
    spec = parse_spec(hf.post_attention_spec(1e-5), "<example>")
    assert (spec.hidden, spec.dtype, [op.kind for op in spec.op], spec.op[1].eps) == (4096, "bfloat16", ["add_residual", "rmsnorm"], 1e-5)
    module = build_variant(spec, tmp_path)
    assert [s.name for s in module.INPUTS] == ["x", "residual", "weight"]
    assert module.Outputs._fields == ("y", "residual_out")


def test_the_fused_layer_is_residual_plus_mlp_of_the_norm_of_the_sum(tmp_path):
    hf = example()
    module = build_variant(parse_spec(hf.post_attention_spec(1e-5), "<example>"), tmp_path)
    torch.manual_seed(0)
    layer = StandInLayer(4096)
    hidden = torch.randn(1, 3, 4096, dtype=torch.bfloat16)
    with torch.no_grad():
        got = hf.FusedPostAttention(layer, module.reference)(hidden, position_embeddings=0.5, attention_mask=None)
        stream = hidden + hidden * 0.5
        norm = (
            stream.float()
            * torch.rsqrt(stream.float().pow(2).mean(-1, keepdim=True) + 1e-5)
            * layer.post_attention_layernorm.weight.float()
        )
        want = stream + layer.mlp(norm.to(torch.bfloat16))
    assert torch.equal(got, want)
