"""The byte ledger: the seed's figures must come out exactly, and both sums follow the one rule
(every input read once, every output written once; unfused intermediates stored in the activation dtype)."""

from __future__ import annotations

import pytest

from fusegen.plan import plan
from fusegen.spec import KernelSpec

SEED_CHAIN = [
    {"kind": "rmsnorm", "eps": 1e-6},
    {"kind": "rope", "rope_dim": 64},
    {"kind": "quant_fp8", "group_size": "token"},
]


def make(ops, hidden=4096, dtype="float16", **outputs):
    return plan(KernelSpec.model_validate({"name": "k", "dtype": dtype, "hidden": hidden, "op": ops, "outputs": outputs}), "k.toml")


def test_seed_figures_y_dropped():
    p = make(SEED_CHAIN, y=False)
    fused, unfused = p.ledger.fused_bytes(4096), p.ledger.unfused_bytes(4096)
    assert round(unfused / 1e6, 1) == 185.6
    assert round(fused / 1e6, 1) == 51.4
    assert round(unfused / fused, 2) == 3.61


def test_fused_bytes_by_hand():
    m, n, h = 1000, 2048, 32
    p = make(SEED_CHAIN, hidden=n, y=True)
    expected = m * n * 2 + n * 2 + 2 * m * h * 4 + m * n * 2 + m * n * 1 + m * 4
    assert p.ledger.fused_bytes(m) == expected


def test_unfused_adds_one_round_trip_per_op_boundary():
    m, n = 512, 1024
    alone = make([{"kind": "rmsnorm"}], hidden=n)
    chained = make([{"kind": "rmsnorm"}, {"kind": "rope", "rope_dim": 64}], hidden=n)
    rope_alone = m * n * 2 + 2 * m * 32 * 4 + m * n * 2
    assert chained.ledger.unfused_bytes(m) == alone.ledger.unfused_bytes(m) + rope_alone
    assert alone.ledger.unfused_bytes(m) == alone.ledger.fused_bytes(m)


@pytest.mark.parametrize("group, scales", [("token", 1), (128, 32), (64, 64)])
def test_scale_bytes_follow_group_size(group, scales):
    p = make([{"kind": "rmsnorm"}, {"kind": "quant_fp8", "group_size": group}], y=False)
    line = next(entry for entry in p.ledger.fused if entry.tensor == "scale")
    assert line.bytes_per_token == 4 * scales


def test_layernorm_statistics_are_counted_once():
    p = make([{"kind": "layernorm"}], mean=True, rstd=True)
    writes = {entry.tensor: entry.bytes_per_token for entry in p.ledger.fused if entry.direction == "write"}
    assert writes == {"y": 4096 * 2, "mean": 4, "rstd": 4}
