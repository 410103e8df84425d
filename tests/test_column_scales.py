"""quant_fp8 scale_layout = "column": the scale is an (M, G) view with strides (1, M padded to 4 floats),
the layout DeepGEMM-style FP8 GEMMs read with TMA. Allocation, the fake implementation, the out= checks
and the reference all give it; provable on the CPU with meta tensors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from fusegen import checking
from fusegen.plan import plan
from fusegen.runtime import KernelArgumentError, TensorSpec, allocate, column_strides
from fusegen.spec import KernelSpec

G128 = {"kind": "quant_fp8", "group_size": 128, "scale_layout": "column"}


def spec(*ops, hidden=1024, **extra) -> KernelSpec:
    return KernelSpec.model_validate({"name": "column_scales", "dtype": "bfloat16", "hidden": hidden, "op": list(ops), **extra})


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    return checking.build_variant(spec({"kind": "rmsnorm"}, G128), tmp_path_factory.mktemp("column"))


def scale_spec(module) -> TensorSpec:
    return next(s for s in module.OUTPUTS if s.name == "scale")


@pytest.mark.parametrize("tokens, padded", [(0, 0), (1, 4), (3, 4), (4, 4), (5, 8), (255, 256), (4097, 4100)])
def test_tokens_pad_to_four_floats_like_deepgemm(tokens, padded):
    """DeepGEMM's get_tma_aligned_size(M, 4) = align(M, 16 / 4)."""
    out = allocate(TensorSpec("scale", torch.float32, ("m", 56), layout="column"), tokens, "cpu")
    assert (tuple(out.shape), out.stride()) == ((tokens, 56), (1, padded))


def test_the_declared_layout_reaches_the_module(module):
    assert scale_spec(module).layout == "column"
    assert all(s.layout == "row" for s in module.OUTPUTS if s.name != "scale")


@pytest.mark.parametrize("tokens", [1, 3, 255])
def test_reference_returns_the_column_layout_with_the_values(module, tokens):
    inputs = checking.random_inputs(module, tokens, torch.Generator().manual_seed(tokens), device="cpu")
    scale = module.reference(*inputs).scale
    assert scale.stride() == column_strides(scale_spec(module), tokens)
    x = inputs[0].float()
    normed = x * torch.rsqrt(x.square().mean(-1, keepdim=True) + 1e-6) * inputs[1].float()
    expected = normed.view(tokens, -1, 128).abs().amax(-1).clamp_min(1e-10) / 448.0
    torch.testing.assert_close(scale, expected, rtol=1e-6, atol=0)


@pytest.mark.parametrize("tokens", [5, 300])
def test_fullgraph_compile_sees_the_column_strides(module, tokens):
    torch._dynamo.reset()
    compiled = torch.compile(lambda *args: module.kernel(*args), fullgraph=True, backend="eager", dynamic=True)
    args = [
        torch.empty_like(t, device="meta") for t in checking.random_inputs(module, tokens, torch.Generator().manual_seed(0), device="cpu")
    ]
    scale = compiled(*args).scale
    assert (scale.device.type, tuple(scale.shape), scale.stride()) == ("meta", (tokens, 8), (1, -(-tokens // 4) * 4))


def test_poisoned_outputs_have_the_kernel_layout(module):
    outputs = checking.poisoned_outputs(module, 7, device="cpu")
    scale = outputs[[s.name for s in module.OUTPUTS].index("scale")]
    assert scale.stride() == (1, 8) and scale.isnan().all()


def test_a_contiguous_scale_passed_as_out_is_refused_naming_the_strides(module):
    args = checking.random_inputs(module, 6, torch.Generator().manual_seed(1), device="cpu")
    out = checking.poisoned_outputs(module, 6, device="cpu")
    index = [s.name for s in module.OUTPUTS].index("scale")
    out[index] = out[index].contiguous()
    with pytest.raises(KernelArgumentError, match=r"output 'scale' must be column-major with strides \(1, 8\).*got strides \(8, 1\)"):
        module.kernel(*args, out=module.Outputs(*out))


def test_a_scale_padded_differently_is_refused(module):
    """DeepGEMM pads to 4 floats; a buffer padded to another multiple would put columns where the GEMM does not read."""
    args = checking.random_inputs(module, 6, torch.Generator().manual_seed(2), device="cpu")
    out = checking.poisoned_outputs(module, 6, device="cpu")
    index = [s.name for s in module.OUTPUTS].index("scale")
    out[index] = torch.empty(8, 16).t()[:6]
    with pytest.raises(KernelArgumentError, match=r"strides \(1, 8\).*got strides \(1, 16\)"):
        module.kernel(*args, out=module.Outputs(*out))


def test_compare_rejects_a_kernel_scale_in_the_row_layout(module):
    tokens = 5
    inputs = checking.random_inputs(module, tokens, torch.Generator().manual_seed(3), device="cpu")
    reference = module.reference(*inputs)
    got = [t.contiguous() for t in reference]
    with pytest.raises(AssertionError, match=r"scale: the kernel's strides are \(8, 1\), not the column layout's \(1, 8\)"):
        checking.compare(module, got, reference, "bfloat16")
    checking.compare(module, list(reference), reference, "bfloat16")


@pytest.mark.parametrize("group, groups", [("token", 1), (128, 8)])
def test_ledger_counts_the_scales_written_not_the_padding(group, groups):
    column = plan(spec({"kind": "quant_fp8", "group_size": group, "scale_layout": "column"}), "column")
    row = plan(spec({"kind": "quant_fp8", "group_size": group}), "row")
    scale = next(line for line in column.ledger.fused if line.tensor == "scale")
    assert scale.bytes_per_token == groups * 4
    assert column.ledger.fused_bytes(3) == row.ledger.fused_bytes(3)


def test_pinned_tokens_declare_the_padded_stride_as_a_number(tmp_path):
    module = checking.build_variant(spec(G128, tokens=999), tmp_path)
    source = (tmp_path / "column_scales" / "kernel.py").read_text()
    assert 'Scale: T.StridedTensor((999, HIDDEN // GROUP_SIZE), (1, 1000), "float32")' in source
    assert module.OUTPUTS[-1] == TensorSpec("scale", torch.float32, ("m", 8), layout="column")


def test_dynamic_tokens_declare_the_padded_stride_for_tilelang_to_check(module):
    source = (Path(module.__file__).parent / "kernel.py").read_text()
    assert 'Scale: T.StridedTensor((m, HIDDEN // GROUP_SIZE), (1, T.ceildiv(m, 4) * 4), "float32")' in source


def test_a_block_of_several_rows_stores_each_groups_rows_as_one_run(tmp_path):
    """quant_fp8.staged_scales: stored from registers, each row's thread writes one scale a group, M floats
    from the next row's; staged, consecutive threads write a group's rows, which are adjacent in Scale."""
    from fusegen.compile import cuda_sources
    from fusegen.cuda_checks import check_cuda

    several = spec({"kind": "rmsnorm"}, {**G128, "group_size": 16}, hidden=512, schedule={"block_m": 4, "threads": 256})
    module = checking.build_variant(several, tmp_path)
    (source,) = cuda_sources(module)
    p = plan(several, "several")
    assert {c.name: c.ok for c in check_cuda(p, [source])}["column scales staged"]
    # Thread t stores row t % 4 of group t / 4: four consecutive floats a group, from shared memory.
    store = re.search(r"Scale\[(.*)\] = \(\(float\*\)scale_staged\)\[", source).group(1)
    assert store.endswith(" + (((int64_t)((int)threadIdx.x)) & (int64_t)3))")
    assert "(((int64_t)((int)threadIdx.x)) >> (int64_t)2) * ((((int64_t)m) + (int64_t)3) >> (int64_t)2)) * (int64_t)4)" in store
    one_row = spec({"kind": "rmsnorm"}, {**G128, "group_size": 16}, hidden=512, schedule={"block_m": 1})
    assert "scale_staged" not in {b.name for r in plan(one_row, "one").routes for b in r.scratch}


def test_pinned_tokens_store_a_threads_adjacent_rows_of_a_group_as_one_vector(tmp_path):
    """With M pinned, Scale's stride is a number: TileLang stores the two rows of a group a thread holds
    (8 rows × 64 groups on 256 threads) as one float2 from shared memory, and the CUDA check counts that
    store as staged (it once read only scalar stores and failed a correct build of such a spec)."""
    from fusegen.compile import cuda_sources
    from fusegen.cuda_checks import check_cuda

    pinned = spec({"kind": "rmsnorm"}, {**G128, "group_size": 16}, schedule={"block_m": 8, "threads": 256}, tokens=4096)
    (source,) = cuda_sources(checking.build_variant(pinned, tmp_path))
    # scale_staged is cast from the dynamic shared buffer where the kernel has another one (a warps' exchange)
    assert re.search(r"\*\(float2\*\)\(Scale \+ [^;]*\) = \*\(float2\*\)\((?:\(\(float\*\)scale_staged\)|scale_staged) \+ ", source)
    check = next(c for c in check_cuda(plan(pinned, "pinned"), [source]) if c.name == "column scales staged")
    assert check.ok, check.detail
