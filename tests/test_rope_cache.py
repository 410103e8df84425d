"""RoPE with source = "cache": cos/sin gathered from a cos_sin_cache at each token's position (CPU).
The kernels themselves run in the GPU matrix (tests/cases.py); here: the contract's argument order,
the reference against the per-token reference fed the same rows, the sampler, the ledger, the small
variant and the debug-mode index check."""

from __future__ import annotations

import inspect
import math
import os

import pytest
import torch

from fusegen.checking import _Draw, build_variant, random_inputs, small_variant
from fusegen.ops import REGISTRY
from fusegen.plan import plan
from fusegen.runtime import KernelArgumentError
from fusegen.spec import KernelSpec

HIDDEN, ROPE_DIM, MAX_POSITION = 256, 32, 4096


def spec(norm="rmsnorm", source="cache", max_position=MAX_POSITION, **rope):
    rope_op = {"kind": "rope", "rope_dim": ROPE_DIM, "source": source, **rope}
    if source == "cache":
        rope_op["max_position"] = max_position
    # Named by its options: build_variant writes each spec to scratch/<name>.
    name = f"{norm}_{source}_{rope.get('style', 'neox')}_{rope.get('span', 'tail')}"
    return KernelSpec.model_validate({"name": name, "dtype": "float32", "hidden": HIDDEN, "op": [{"kind": norm}, rope_op]})


def fresh_generator() -> torch.Generator:
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"seed {seed}")
    return torch.Generator().manual_seed(seed)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("rope_cache")


@pytest.mark.parametrize(
    "norm, source, expected",
    [
        ("rmsnorm", "cache", ["x", "weight", "positions", "cos_sin_cache"]),
        ("layernorm", "cache", ["x", "weight", "bias", "positions", "cos_sin_cache"]),
        ("layernorm", "per_token", ["x", "weight", "bias", "cos", "sin"]),
    ],
)
def test_the_kernel_declares_its_inputs_in_the_contracts_order(norm, source, expected, scratch):
    module = build_variant(spec(norm, source), scratch)
    assert [s.name for s in module.INPUTS] == expected
    declared = {s.name: (s.dtype, s.shape, s.bound) for s in module.INPUTS}
    if source == "cache":
        # The position's bound is the cache's row count: what the debug check holds it to.
        assert declared["positions"] == (torch.int64, ("m",), MAX_POSITION)
        assert declared["cos_sin_cache"] == (torch.float32, (MAX_POSITION, ROPE_DIM), None)
    assert list(inspect.signature(module.kernel).parameters) == [*expected, "out"]


@pytest.mark.parametrize("style, span", [("neox", "tail"), ("gptj", "head")])
def test_the_reference_rotates_by_the_cache_rows_the_positions_name(style, span, scratch):
    """The cache reference equals the per-token reference given cos = cache[p, :d/2], sin = cache[p, d/2:]."""
    cached = build_variant(spec(style=style, span=span), scratch)
    per_token = build_variant(spec(source="per_token", style=style, span=span), scratch)
    tokens = 9
    x, weight, positions, cache = random_inputs(cached, tokens, fresh_generator(), device="cpu")
    rows = torch.stack([cache[int(p)] for p in positions])
    want = per_token.reference(x, weight, rows[:, : ROPE_DIM // 2].contiguous(), rows[:, ROPE_DIM // 2 :].contiguous())
    got = cached.reference(x, weight, positions, cache)
    torch.testing.assert_close(got.y, want.y, rtol=0, atol=0)
    # Rows differ in position, so a reference that ignored the positions could not match both.
    assert not torch.equal(rows[0], rows[-1])


def test_the_sampler_draws_positions_in_range_with_both_edges_and_a_real_rope_table():
    op = spec().model_dump(mode="json")["op"][1]
    shapes = {"positions": (50,), "cos_sin_cache": (MAX_POSITION, ROPE_DIM)}
    drawn = REGISTRY["rope"].sample_inputs(op, shapes, _Draw(fresh_generator()))
    positions, cache = drawn["positions"], drawn["cos_sin_cache"]
    assert positions.dtype == torch.int64 and positions.shape == (50,)
    assert positions[0] == 0 and positions[-1] == MAX_POSITION - 1
    assert positions.min() >= 0 and positions.max() < MAX_POSITION
    assert len(set(positions.tolist())) > 10, "positions between the edges are random, not one value"
    half = ROPE_DIM // 2
    for p in (0, 1, 777, MAX_POSITION - 1):
        for j in (0, 5, half - 1):
            angle = p * 10000.0 ** (-2 * j / ROPE_DIM)
            assert cache[p, j].item() == pytest.approx(math.cos(angle), abs=1e-6)
            assert cache[p, half + j].item() == pytest.approx(math.sin(angle), abs=1e-6)


def test_the_ledger_counts_the_rows_the_tokens_read_not_the_whole_cache():
    m = 1000
    small, large = plan(spec(max_position=16), "k.toml"), plan(spec(max_position=1 << 20), "k.toml")
    assert small.ledger.fused_bytes(m) == large.ledger.fused_bytes(m)
    assert small.ledger.unfused_bytes(m) == large.ledger.unfused_bytes(m)
    per_token = plan(spec(source="per_token"), "k.toml")
    # One int64 position per token on top of the same cos/sin floats the per-token inputs carry.
    assert large.ledger.fused_bytes(m) == per_token.ledger.fused_bytes(m) + m * 8
    assert large.ledger.unfused_bytes(m) == per_token.ledger.unfused_bytes(m) + m * 8


def test_the_small_variant_shrinks_the_cache():
    small = small_variant(spec(max_position=131072).model_dump(mode="json"))
    rope = small.op[1]
    assert (rope.rope_dim, rope.max_position, rope.source) == (32, 64, "cache")
    assert small_variant(spec(max_position=16).model_dump(mode="json")).op[1].max_position == 16


def test_debug_mode_refuses_positions_outside_the_cache(scratch):
    launcher = build_variant(spec(), scratch).launcher
    args = [torch.randn(3, HIDDEN), torch.randn(HIDDEN), torch.tensor([0, 5, MAX_POSITION - 1]), torch.randn(MAX_POSITION, ROPE_DIM)]
    launcher.check_indices(args)
    for bad in ([0, MAX_POSITION, 1], [-1, 0, 0]):
        args[2] = torch.tensor(bad)
        with pytest.raises(
            KernelArgumentError, match=rf"input 'positions' holds values from {min(bad)} to {max(bad)}; .* \[0, {MAX_POSITION}\)"
        ):
            launcher.check_indices(args)
