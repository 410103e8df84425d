"""Each generated kernel is a torch op (torch.ops.fusegen.<identity>) whose fake implementation lets
torch.compile trace a model that calls it: provable on a CPU-only torch with meta tensors."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import torch

from fusegen import checking, testing
from fusegen.compile import import_package
from fusegen.runtime import KernelArgumentError, op_name
from fusegen.spec import KernelSpec

EXAMPLES = sorted(p.name for p in Path("generated").iterdir() if (p / "__init__.py").is_file())


def example(name):
    return importlib.import_module(f"generated.{name}")


def token_counts(module):
    return (module.launcher.tokens,) if module.launcher.tokens else (3, 17)


def on_meta(tensors):
    return [torch.empty_like(t, device="meta") for t in tensors]


@pytest.mark.parametrize("name", EXAMPLES)
def test_importing_a_kernel_registers_its_ops(name):
    module = example(name)
    packet = getattr(torch.ops.fusegen, op_name(module.IDENTITY))
    assert module.launcher.op is packet.default
    assert module.launcher.op_out is packet.out
    assert [a.name for a in packet.default._schema.arguments] == [s.name for s in module.INPUTS]
    mutated = [a.name for a in packet.out._schema.arguments if a.alias_info and a.alias_info.is_write]
    assert mutated == [s.name for s in module.OUTPUTS]


@pytest.mark.parametrize("name", EXAMPLES)
def test_fake_outputs_match_the_reference_in_shape_dtype_and_strides(name):
    """The reference runs on the CPU with real inputs: an account of the outputs independent of the fake."""
    module = example(name)
    for tokens in token_counts(module):
        inputs = checking.random_inputs(module, tokens, torch.Generator().manual_seed(tokens), device="cpu")
        expected = module.reference(*inputs)
        faked = module.launcher.op(*on_meta(inputs))
        faked = (faked,) if isinstance(faked, torch.Tensor) else faked
        assert len(faked) == len(expected)
        for spec, fake, real in zip(module.OUTPUTS, faked, expected):
            assert (fake.device.type, fake.shape, fake.dtype, fake.stride()) == ("meta", real.shape, real.dtype, real.stride()), spec.name


def meta_args(module, tokens):
    return on_meta(checking.random_inputs(module, tokens, torch.Generator().manual_seed(0), device="cpu"))


def meta_outputs(module, tokens):
    return on_meta(checking.poisoned_outputs(module, tokens, device="cpu"))


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("name", ["rms_norm_rope_quant_fused", "layer_norm_fwd", "rms_norm"])
def test_fullgraph_compile_traces_the_kernel_with_dynamic_token_counts(name, backend):
    """aot_eager adds functionalization, which the out variant's declared mutations must survive."""
    module = example(name)
    torch._dynamo.reset()

    def model(*args):
        outputs = module.kernel(*args)
        return [t.float() * 2 for t in outputs]

    def model_out(*tensors):
        args, out = tensors[: len(module.INPUTS)], tensors[len(module.INPUTS) :]
        outputs = module.kernel(*args, out=out)
        return [t.float() + 1 for t in outputs]

    compiled = torch.compile(model, fullgraph=True, backend=backend, dynamic=True)
    compiled_out = torch.compile(model_out, fullgraph=True, backend=backend, dynamic=True)
    for tokens in (5, 300):
        for results in (compiled(*meta_args(module, tokens)), compiled_out(*meta_args(module, tokens), *meta_outputs(module, tokens))):
            shapes = [tuple(tokens if d == "m" else d for d in s.shape) for s in module.OUTPUTS]
            assert [tuple(r.shape) for r in results] == shapes
            assert {r.dtype for r in results} == {torch.float32}
            assert {r.device.type for r in results} == {"meta"}


def test_tracing_rejects_a_wrong_shape_with_the_launcher_sentence():
    module = example("rms_norm_rope_quant_fused")
    torch._dynamo.reset()
    args = meta_args(module, 4)
    args[2] = torch.empty(4, 64, device="meta")
    with pytest.raises(Exception, match=r"rms_norm_rope_quant_fused: input 'cos' must have shape \(4, 32\), got \(4, 64\)"):
        torch.compile(module.kernel, fullgraph=True, backend="eager")(*args)


def test_a_bad_output_buffer_is_named_under_tracing():
    module = example("rms_norm_rope_quant_fused")
    torch._dynamo.reset()
    out = meta_outputs(module, 4)
    out[1] = torch.empty(4, 4096, dtype=torch.float16, device="meta")
    with pytest.raises(Exception, match="output 'q' must be torch.float8_e4m3fn, got torch.float16"):
        torch.compile(lambda *a: module.kernel(*a, out=out), fullgraph=True, backend="eager")(*meta_args(module, 4))


def test_the_op_called_directly_checks_like_the_kernel():
    module = example("rms_norm")
    args = checking.random_inputs(module, 4, torch.Generator().manual_seed(1), device="cpu")
    with pytest.raises(KernelArgumentError, match="rms_norm: input 'x' must be on a CUDA device, got cpu"):
        module.launcher.op(*args)
    with pytest.raises(KernelArgumentError, match="rms_norm: input 'weight' must be torch.float16, got torch.float32"):
        module.launcher.op_out(args[0], args[1].float(), torch.empty(4, 4096, dtype=torch.float16))


def test_importing_a_kernel_again_serves_its_op_from_the_new_launcher(tmp_path):
    """The same identity imported under another package name (fusegen.load's cache, a test's scratch copy)
    shares the op rather than failing to define it twice; the newest launcher runs it."""
    original = example("rms_norm")
    copy = import_package(Path("generated/rms_norm"), "_fusegen_test_second_rms_norm")
    assert copy.launcher is not original.launcher
    assert copy.launcher.op is original.launcher.op
    from fusegen import runtime

    assert runtime._SERVING[op_name(original.IDENTITY)] is copy.launcher


# Inductor's CPU backend calls torch's own deprecated torch.jit.script_method as it loads: torch's warning, not ours.
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
def test_under_inductor_a_strided_input_reaches_the_op_contiguous():
    """A q sliced from a fused qkv projection is a strided view. Called eagerly the kernel refuses it, naming
    .contiguous(); under torch.compile the functional op's needs_contiguous_strides tag has Inductor make it
    contiguous first. On a CPU the call then stops at the device check (the kernel runs on CUDA), past the
    contiguity one: the contiguity check comes first, so the message says which copy Inductor made."""
    if not hasattr(torch.Tag, "needs_contiguous_strides"):
        pytest.skip(f"torch {torch.__version__} has no needs_contiguous_strides tag (torch 2.8 added it)")
    module = example("rms_norm")
    assert torch.Tag.needs_contiguous_strides in module.launcher.op.tags
    assert torch.Tag.needs_contiguous_strides not in module.launcher.op_out.tags  # column-major Scale keeps its strides
    (x, weight) = checking.random_inputs(module, 4, torch.Generator().manual_seed(0), device="cpu")
    qkv = torch.cat([x, x, x], dim=1)

    def attention_input(qkv, weight):
        return module.kernel(qkv[:, : x.shape[1]], weight)

    with pytest.raises(KernelArgumentError, match="must be contiguous"):
        attention_input(qkv, weight)
    torch._dynamo.reset()
    with pytest.raises(KernelArgumentError, match="must be on a CUDA device"):
        torch.compile(attention_input, fullgraph=True, backend="inductor")(qkv, weight)


@testing.requires_gpu
@pytest.mark.parametrize("scale_layout", ["row", "column"])
def test_a_qkv_slice_under_inductor_runs_as_the_kernel_on_its_contiguous_copy(scale_layout, tmp_path):
    """On the GPU: the slice Inductor makes contiguous for the op gives the outputs the kernel gives called on a
    contiguous copy, bit for bit and in the same strides (a column-major Scale keeps its own), and those match
    the reference."""
    spec = checking.spec_of(example("rms_norm_rope_quant_fused"))
    spec["op"][-1]["scale_layout"] = scale_layout
    module = checking.build_variant(KernelSpec.model_validate(spec), tmp_path)
    inputs = checking.random_inputs(module, 37, torch.Generator().manual_seed(47))
    x, rest = inputs[0], inputs[1:]
    qkv = torch.cat([x, torch.randn_like(x), torch.randn_like(x)], dim=1)

    def attention_input(qkv, *rest):
        return module.kernel(qkv[:, : x.shape[1]], *rest)

    torch._dynamo.reset()
    compiled = torch.compile(attention_input, fullgraph=True, dynamic=True)(qkv, *rest)
    eager = module.kernel(x, *rest)
    for name, got, want in zip([s.name for s in module.OUTPUTS], compiled, eager):
        assert got.stride() == want.stride() and torch.equal(got.float(), want.float()), name
    checking.compare(module, list(eager), list(module.reference(*inputs)), spec["dtype"])
