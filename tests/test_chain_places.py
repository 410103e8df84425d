"""Where ops may sit in a chain (ops.Place): one order per op, or a span of orders for an op whose output
is the same kind of value as its input, which then runs anywhere in that span (CPU, no op module needed:
a stand-in op is registered for the test)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from fusegen import ops
from fusegen.ops import NORMALIZE, QUANTIZE, REGISTRY, between, chain_order, misplaced


@pytest.fixture
def spanning(monkeypatch):
    """The ops of one order, and a stand-in op that may run anywhere after the norm and before the
    quantiser (in place of any registered op of a span, so the words below stay these)."""
    fixed = {kind: op for kind, op in REGISTRY.items() if op.place.last is None}
    stand_in = SimpleNamespace(kind="spanning", place=between(NORMALIZE, QUANTIZE, "spanning"))
    monkeypatch.setattr(ops, "REGISTRY", {**fixed, "spanning": stand_in})
    return "spanning"


def test_ops_of_one_order_keep_their_order():
    assert misplaced(["add_residual", "rmsnorm", "rope", "quant_fp8"]) is None
    assert misplaced(["rope"]) is None
    assert misplaced(["rmsnorm", "quant_fp8", "rope"]) == (2, "quant_fp8")
    assert misplaced(["rmsnorm", "layernorm"]) == (1, "rmsnorm")
    assert misplaced(["add_residual", "rope", "rope"]) == (2, "rope")


def test_an_op_of_a_span_runs_anywhere_in_it(spanning):
    assert misplaced(["rmsnorm", spanning, "rope", "quant_fp8"]) is None
    assert misplaced(["rmsnorm", "rope", spanning, "quant_fp8"]) is None
    assert misplaced(["add_residual", spanning]) is None
    assert misplaced([spanning]) is None


def test_an_op_of_a_span_stays_inside_it(spanning):
    assert misplaced([spanning, "rmsnorm"]) == (1, spanning)
    assert misplaced(["rmsnorm", "quant_fp8", spanning]) == (2, "quant_fp8")
    assert misplaced(["rmsnorm", spanning, "add_residual"]) == (2, "rmsnorm")


def test_an_op_of_a_span_runs_once(spanning):
    assert misplaced(["rmsnorm", spanning, "rope", spanning]) == (3, spanning)


def test_the_order_in_words_says_where_a_span_lies(spanning):
    assert chain_order() == (
        "add_residual → normalization (rmsnorm | layernorm) → rope → quant_fp8, spanning anywhere after normalization and before quant_fp8"
    )
