"""Correctness checking of generated kernels against their references: the library that `fusegen bench`
and `fusegen tune` use and the pytest helpers in testing.py call. It does not import pytest.

Inputs are fresh random draws from a seeded generator for every check (the seed is printed when a check
fails, so the run can be replayed), outputs are poisoned with NaN before each launch so an unwritten
element cannot pass, and every output is compared by the tolerance its op declares (ops/: each output
says how it is judged and why); an output without one is an error, never skipped."""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

import torch

from . import oracle
from .compile import import_package
from .emit import render
from .errors import ChainError
from .ops import REGISTRY, ChainContext, Tolerance, output_decl
from .plan import plan
from .runtime import allocate, column_strides, shape_of
from .spec import KernelSpec, ScheduleHints
from .tolerance import ROW

# The seed's first-run shape; each op shrinks itself to it (Op.small_variant).
SEED_SMALL = {"tokens": 8, "hidden": 256}
SPEC_SHAPE_TOKENS = (3, 4096)


def spec_of(module) -> dict:
    return json.loads((Path(module.__file__).parent / "plan.json").read_text())["spec"]


def tolerance_of(name: str) -> Tolerance:
    """How output `name` is compared: the chain's row by ROW, every other output by what its op declares."""
    if name == "y":
        return ROW
    declared = output_decl(name)
    if declared is None:
        raise LookupError(f"output {name!r} has no tolerance class: no op declares it, so it cannot be compared")
    return declared.tolerance


class _Draw:
    """Op.sample_inputs' view of one generator."""

    def __init__(self, generator: torch.Generator):
        self.generator = generator

    def normal(self, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.randn(shape, generator=self.generator)

    def uniform(self, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.rand(shape, generator=self.generator)

    def integers(self, high: int, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.randint(high, shape, generator=self.generator)


def random_inputs(module, tokens: int, generator: torch.Generator, device="cuda") -> list[torch.Tensor]:
    """Fresh inputs: x ~ N(0, 1) with an offset per row, then each op's own inputs as the op samples them."""
    shapes = {s.name: shape_of(s, tokens) for s in module.INPUTS}
    draw = _Draw(generator)
    drawn = {"x": draw.normal(shapes["x"]) + 0.5 * draw.normal((shapes["x"][0], 1))}
    for op in spec_of(module)["op"]:
        drawn.update(REGISTRY[op["kind"]].sample_inputs(op, shapes, draw))
    return [drawn[s.name].to(s.dtype).to(device) for s in module.INPUTS]


def poisoned_outputs(module, tokens: int, device="cuda") -> list[torch.Tensor]:
    return [
        allocate(spec, tokens, device).copy_(torch.full(shape_of(spec, tokens), float("nan"), device=device)) for spec in module.OUTPUTS
    ]


OracleRows = Callable[[torch.Tensor], Mapping[str, torch.Tensor]]


def compare(module, outputs, reference, dtype: str, oracle_rows: OracleRows | None = None) -> None:
    """Asserts every output of a kernel run against the reference's, each by its tolerance class.
    `oracle_rows` (oracle_of): rows -> the float64 oracle's outputs, for tolerances that consult it."""
    names = [s.name for s in module.OUTPUTS]
    tolerances = {name: tolerance_of(name) for name in names}
    got, want = dict(zip(names, outputs)), dict(zip(names, reference))
    for spec in module.OUTPUTS:
        if spec.layout == "column":
            for source, tensor in (("kernel", got[spec.name]), ("reference", want[spec.name])):
                strides = column_strides(spec, tensor.shape[0])
                assert tuple(tensor.stride()) == strides, (
                    f"{spec.name}: the {source}'s strides are {tuple(tensor.stride())}, not the column layout's {strides}"
                )
    for name in names:
        assert not torch.isnan(got[name].float()).any() or torch.isnan(want[name].float()).any(), (
            f"{name}: NaN left in the output (an element was not written, or the kernel produced NaN)"
        )
    for name in names:
        tolerances[name].check(name, got, want, dtype, oracle_rows)


def oracle_of(module, inputs) -> OracleRows:
    """Rows -> the float64 oracle's outputs of those rows (the chain is row-independent)."""
    spec = spec_of(module)
    named = {s.name: t for s, t in zip(module.INPUTS, inputs)}
    per_row = {s.name for s in module.INPUTS if s.shape[0] == "m"}

    def of_rows(rows: torch.Tensor) -> Mapping[str, torch.Tensor]:
        selected = {name: (t[rows.to(t.device)] if name in per_row else t).cpu() for name, t in named.items()}
        return oracle.run_chain(spec, selected)

    return of_rows


def run_and_compare(module, tokens: int, seed: int | None = None, device: str = "cuda") -> None:
    """One launch on fresh inputs against the reference. A failure names the seed: pass it back as `seed`
    to replay the same inputs."""
    seed = secrets.randbits(32) if seed is None else seed
    inputs = random_inputs(module, tokens, torch.Generator().manual_seed(seed), device)
    outputs = poisoned_outputs(module, tokens, device)
    module.kernel(*inputs, out=module.Outputs(*outputs))
    if device == "cuda":
        torch.cuda.synchronize()
    reference = module.reference(*inputs)
    try:
        compare(module, outputs, reference, spec_of(module)["dtype"], oracle_of(module, inputs))
    except AssertionError as exc:
        raise AssertionError(
            f"{exc}\n(inputs drawn with seed {seed} at {tokens} tokens: run_and_compare(module, {tokens}, seed={seed}) replays them)"
        ) from exc


_counter = iter(range(1 << 30))
_counter_lock = threading.Lock()


def build_variant(spec: KernelSpec, directory: Path, tuned: tuple = ()):
    """Plans (with tuning routes, if given), emits and imports a spec in a scratch directory (no
    generated/ involved)."""
    return import_plan(plan(spec, "<variant of " + spec.name + ">", tuned), directory)


def build_staged(spec: KernelSpec, directory: Path):
    """Builds a spec as `fusegen build` and `fusegen.load` do (build.stage: compiled for sm_90a, launch bounds
    from ptxas's registers where the planner's program keeps few warps an SM) in a scratch directory, and
    imports it: the kernel a user gets, where build_variant gives the planner's plan as it stands."""
    from .build import stage

    with _counter_lock:
        staging = directory / f"staged_{next(_counter)}"
    (built,) = stage([plan(spec, "<staged " + spec.name + ">")], staging, jobs=1)
    with _counter_lock:
        package = f"_fusegen_staged_{spec.name}_{next(_counter)}"
    return import_package(staging / spec.name, package)


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
    """The seed's first-run shape for the same chain: hidden 256 (with head_dim, at least two whole
    heads), each op shrunk to it (rope_dim 32), schedule hints reset."""
    data = json.loads(json.dumps(spec))
    head_dim = data.get("head_dim")
    small_hidden = head_dim * max(2, SEED_SMALL["hidden"] // head_dim) if head_dim else SEED_SMALL["hidden"]
    full = ChainContext(data["dtype"], data["hidden"], {}, head_dim=head_dim)
    small = ChainContext(data["dtype"], small_hidden, {}, head_dim=head_dim)
    data["hidden"] = small_hidden
    data["tokens"] = None
    data["schedule"] = {"variant": data["schedule"]["variant"]}
    data["op"] = [REGISTRY[op["kind"]].small_variant(op, small, full) for op in data["op"]]
    shrunk = KernelSpec.model_validate(data)
    try:
        plan(shrunk, "<small variant>")
    except ChainError:
        # The variant may not hold the small width (a reread needs two tiles, which 256 columns do not
        # make): the first-run shape then takes the planner's own variant.
        shrunk = shrunk.model_copy(update={"schedule": ScheduleHints()})
    return shrunk
