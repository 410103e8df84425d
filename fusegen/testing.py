"""Correctness checking of generated kernels against their references, shared by every generated test.

The tolerance table lives here, once. Inputs are fresh random draws for every check, outputs are
poisoned with NaN before each launch so an unwritten element cannot pass, and FP8 is checked on the
scale, on the dequantised values and on the fp8 codes themselves.
"""
from __future__ import annotations

import importlib
import json
import math
import os
import threading
from pathlib import Path

import torch

from . import oracle
from .compile import import_package
from .emit import render
from .plan import plan
from .spec import KernelSpec

# (atol, rtol) per output class and activation dtype. The seed's figures are the ceiling.
TOLERANCES = {
    # Row outputs are rounded once from fp32; kernel and reference differ only by fp32 summation order
    # (~1e-6 relative) before that rounding, so at most one ulp of the output dtype apart: fp16 ulp is
    # 2^-10 relative, bf16 2^-7 (values are O(1..5) after normalisation). The seed's 1e-2 covers both.
    ("row", "float16"): (1e-2, 1e-2),
    ("row", "bfloat16"): (1e-2, 1e-2),
    # fp32 rows are not rounded at the end; only summation order and rsqrt's ~2 ulp differ (seed: 1e-4).
    ("row", "float32"): (1e-4, 1e-4),
    # Mean and Rstd are fp32 statistics of the same loaded values: reduction-order differences only.
    ("stat", "float16"): (1e-4, 1e-4),
    ("stat", "bfloat16"): (1e-4, 1e-4),
    ("stat", "float32"): (1e-4, 1e-4),
    # Scales are amax/fp8_max of fp32 values that agree to ~1e-6; the seed allows 1e-2.
    ("scale", "any"): (1e-6, 1e-2),
    # Dequantised values: one fp8 step apart at most where v/scale sits on a rounding boundary. e4m3 has
    # 3 mantissa bits (a step is ≤ 12.5 % of the value, the seed's 1e-1 with its atol covers O(1) values);
    # e5m2 has 2, so its step is twice as large.
    ("dequant", "float8_e4m3fn"): (1e-1, 1e-1),
    ("dequant", "float8_e5m2"): (2e-1, 2e-1),
}
# Of all fp8 codes, at most this fraction may differ from the reference's (each by one step) without
# being shown a rounding tie: more means a systematic error (wrong scale, wrong rounding).
MAX_CODE_MISMATCH = 1e-3
# A code that differs by one step is a tie when the exact (float64) quotient lies this close, relative,
# to the midpoint between the two codes: kernel and reference each compute it in fp32 to ~2^-20, so
# they can only round to different sides of a midpoint that near. bf16 inputs without enough mantissa
# to spread their quotients make such ties common (above 1e-3 of a row's codes, NOTES.md step 14).
TIE_WINDOW = 2.0**-17
# Rows whose mismatching codes are checked against the float64 oracle (it runs on the CPU).
TIE_ROWS_CHECKED = 64
# The error of an fp32 chain of a few operations, as a fraction of its largest operands' magnitude.
FP32_NOISE = 2.0**-20
SEED_SMALL = {"tokens": 8, "hidden": 256, "rope_dim": 32}
SPEC_SHAPE_TOKENS = (3, 4096)


def gpu_available() -> bool:
    return torch.cuda.is_available()


def requires_gpu(test):
    """Marks a test as a GPU test (`pytest -m gpu`) and skips it, saying why, where there is no GPU."""
    # Imported here, not at the top: bench and tune use the rest of this module and must run without the
    # test extra installed.
    import pytest

    reason = "needs a CUDA GPU (Hopper, sm_90a); on CPU the suite checks references and compilation instead"
    return pytest.mark.gpu(pytest.mark.skipif(not gpu_available(), reason=reason)(test))


def tolerance(kind: str, dtype: str) -> tuple[float, float]:
    return TOLERANCES.get((kind, dtype)) or TOLERANCES[(kind, "any")]


def _spec_of(module) -> dict:
    return json.loads((Path(module.__file__).parent / "plan.json").read_text())["spec"]


def spec_shape_tokens(package: str) -> tuple[int, ...]:
    spec = _spec_of(importlib.import_module(package))
    return (spec["tokens"],) if spec.get("tokens") else SPEC_SHAPE_TOKENS


def random_inputs(module, tokens: int, generator: torch.Generator, device="cuda") -> list[torch.Tensor]:
    """Fresh inputs: x ~ N(0, 1) with an offset per row, weights near 1, cos/sin of real angles."""
    tensors = []
    for spec in module.INPUTS:
        shape = tuple(tokens if d == "m" else d for d in spec.shape)
        if spec.name in ("cos", "sin"):
            continue
        if spec.name == "x":
            value = torch.randn(shape, generator=generator) + 0.5 * torch.randn(shape[0], 1, generator=generator)
        elif spec.name == "weight":
            value = 1.0 + 0.25 * torch.randn(shape, generator=generator)
        else:
            value = 0.1 * torch.randn(shape, generator=generator)
        tensors.append((spec.name, value.to(spec.dtype)))
    names = [s.name for s in module.INPUTS]
    if "cos" in names:
        half = next(s for s in module.INPUTS if s.name == "cos").shape[1]
        angle = torch.rand((tokens, half), generator=generator) * (2 * math.pi)
        tensors += [("cos", torch.cos(angle)), ("sin", torch.sin(angle))]
    by_name = dict(tensors)
    return [by_name[name].to(device) for name in names]


def poisoned_outputs(module, tokens: int, device="cuda") -> list[torch.Tensor]:
    results = []
    for spec in module.OUTPUTS:
        shape = tuple(tokens if d == "m" else d for d in spec.shape)
        results.append(torch.full(shape, float("nan"), dtype=torch.float32, device=device).to(spec.dtype))
    return results


def _fp8_code_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Steps between fp8 values: codes are sign-magnitude, so map them to a monotonic integer line."""

    def line(t):
        bits = t.view(torch.uint8).to(torch.int32)
        magnitude = bits & 0x7F
        return torch.where(bits & 0x80 != 0, -magnitude, magnitude)

    return (line(a) - line(b)).abs()


def compare(module, outputs, reference, dtype: str, unrounded_rows=None) -> None:
    """Asserts every output of a kernel run against the reference's, by output class. `unrounded_rows`
    (exact_quotient): where fp8 codes differ, whether each is a rounding tie of the exact quotient."""
    names = [s.name for s in module.OUTPUTS]
    got, want = dict(zip(names, outputs)), dict(zip(names, reference))
    for name in names:
        assert not torch.isnan(got[name].float()).any() or torch.isnan(want[name].float()).any(), (
            f"{name}: NaN left in the output (an element was not written, or the kernel produced NaN)"
        )
    for name in names:
        if name in ("y",):
            atol, rtol = tolerance("row", dtype)
            torch.testing.assert_close(got[name].float(), want[name].float(), atol=atol, rtol=rtol, msg=lambda m: f"y: {m}")
        elif name in ("mean", "rstd"):
            atol, rtol = tolerance("stat", dtype)
            torch.testing.assert_close(got[name], want[name], atol=atol, rtol=rtol, msg=lambda m, n=name: f"{n}: {m}")
    if "q" in names:
        q, scale, rq, rscale = got["q"], got["scale"], want["q"], want["scale"]
        atol, rtol = tolerance("scale", dtype)
        torch.testing.assert_close(scale, rscale, atol=atol, rtol=rtol, msg=lambda m: f"scale: {m}")
        groups = scale.shape[1]
        dequant = (q.float().view(q.shape[0], groups, -1) * scale[..., None]).view(q.shape)
        rdequant = (rq.float().view(q.shape[0], groups, -1) * rscale[..., None]).view(q.shape)
        fp8 = str(q.dtype).removeprefix("torch.")
        atol, rtol = tolerance("dequant", fp8)
        torch.testing.assert_close(dequant, rdequant, atol=atol, rtol=rtol, msg=lambda m: f"Q·Scale: {m}")
        distance = _fp8_code_distance(q, rq)
        # fp32 evaluation order (the kernel's FMA contraction, torch's separate roundings) moves a value by
        # a few ulps of the largest operands that made it: up to ~2^-20 of its group's range. Near zero,
        # e5m2's codes are finer than that (RoPE's a·cos − b·sin can cancel to almost nothing), so such a
        # value may land several codes away while both dequantize to the same value within that noise.
        # Everywhere else a code may differ by one step at most.
        group_noise = (scale * torch.finfo(q.dtype).max * FP32_NOISE)[..., None].expand(-1, -1, q.shape[1] // groups).reshape(q.shape)
        beyond_noise = distance * ((dequant - rdequant).abs() > group_noise)
        assert beyond_noise.max().item() <= 1, f"q: fp8 codes differ by up to {beyond_noise.max().item()} steps"
        unexplained = (beyond_noise > 0).sum().item()
        if unexplained and unrounded_rows is not None:
            unexplained -= _proven_ties(q, rq, beyond_noise > 0, unrounded_rows)
        mismatch = unexplained / q.numel()
        assert mismatch <= MAX_CODE_MISMATCH, f"q: {mismatch:.2e} of fp8 codes differ from the reference, not at a rounding tie"


def _proven_ties(q, rq, differs, unrounded_rows) -> int:
    """How many differing codes in the first TIE_ROWS_CHECKED rows with any are rounding ties of the exact
    quotient; a differing code there that is not one fails at once."""
    rows = differs.any(dim=1).nonzero()[:TIE_ROWS_CHECKED, 0]
    exact = unrounded_rows(rows.cpu()).to(q.device)
    checked = differs[rows]
    midpoint = (q[rows].double() + rq[rows].double()) / 2
    # In scaled units the group's fp32 noise (see compare) is fp8_max · FP32_NOISE: it bounds where a value
    # that cancelled to near zero may sit.
    window = TIE_WINDOW * midpoint.abs() + torch.finfo(q.dtype).max * FP32_NOISE
    far = checked & ((exact - midpoint).abs() > window)
    if far.any():
        r, c = far.nonzero()[0].tolist()
        raise AssertionError(
            f"q: code {q[rows[r], c].item()} against the reference's {rq[rows[r], c].item()} at row {rows[r].item()}, column {c}: "
            f"the exact quotient {exact[r, c].item()!r} is not at their rounding midpoint"
        )
    return checked.sum().item()


def exact_quotient(module, inputs):
    """Rows -> the float64 oracle's unrounded fp8 quotient of those rows (the chain is row-independent)."""
    spec = _spec_of(module)
    named = {s.name: t for s, t in zip(module.INPUTS, inputs)}
    per_row = {s.name for s in module.INPUTS if s.shape[0] == "m"}

    def of_rows(rows: torch.Tensor) -> torch.Tensor:
        selected = {name: (t[rows.to(t.device)] if name in per_row else t).cpu() for name, t in named.items()}
        return oracle.run_chain(spec, selected)["q_unrounded"]

    return of_rows


def run_and_compare(module, tokens: int, seed: int | None = None) -> None:
    generator = torch.Generator().manual_seed(seed if seed is not None else int.from_bytes(os.urandom(4), "little"))
    inputs = random_inputs(module, tokens, generator)
    outputs = poisoned_outputs(module, tokens)
    module.kernel(*inputs, out=module.Outputs(*outputs))
    torch.cuda.synchronize()
    reference = module.reference(*inputs)
    compare(module, outputs, reference, _spec_of(module)["dtype"], exact_quotient(module, inputs))


def check_module(package: str, tokens: int) -> None:
    run_and_compare(importlib.import_module(package), tokens)


_counter = iter(range(1 << 30))
_counter_lock = threading.Lock()


def build_variant(spec: KernelSpec, directory: Path, tuned: tuple = ()):
    """Plans (with tuning routes, if given), emits and imports a spec in a scratch directory (no
    generated/ involved)."""
    return import_plan(plan(spec, "<variant of " + spec.name + ">", tuned), directory)


def import_plan(p, directory: Path):
    """Emits a plan's files into a scratch directory and imports them as a package."""
    target = directory / p.name
    target.mkdir(parents=True, exist_ok=True)
    for name, text in render(p).items():
        (target / name).write_text(text)
    with _counter_lock:
        package = f"_fusegen_variant_{p.name}_{next(_counter)}"
    return import_package(target, package)


def cuda_check_failures(spec: KernelSpec, directory: Path, tuned: tuple = ()) -> list[str]:
    """Compiles a spec (every routed program) for sm_90a in a scratch directory and returns the CUDA
    checks it fails."""
    from .compile import cuda_sources
    from .cuda_checks import check_cuda

    p = plan(spec, spec.name, tuned)
    return [f"{c.name}: {c.detail}" for c in check_cuda(p, cuda_sources(import_plan(p, directory))) if not c.ok]


def small_variant(spec: dict) -> KernelSpec:
    """The seed's first-run shape for the same chain: N = 256, rope_dim 32, schedule hints reset."""
    data = json.loads(json.dumps(spec))
    data["hidden"] = SEED_SMALL["hidden"]
    data["tokens"] = None
    data["schedule"] = {"variant": data["schedule"]["variant"]}
    for op in data["op"]:
        if op["kind"] == "rope":
            op["rope_dim"] = SEED_SMALL["rope_dim"]
        if op["kind"] == "quant_fp8" and op["group_size"] != "token":
            fitting = math.gcd(op["group_size"], SEED_SMALL["hidden"])
            op["group_size"] = fitting if fitting >= 8 else "token"
    return KernelSpec.model_validate(data)


def check_small_variant(package: str, directory: Path) -> None:
    spec = small_variant(_spec_of(importlib.import_module(package)))
    run_and_compare(build_variant(spec, directory), SEED_SMALL["tokens"])
