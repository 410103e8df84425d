"""An independent float64 formulation of the numerics README.md states (section Numerics): each op's
`oracle_step` is written from those formulas with explicit index arithmetic rather than the generated
reference's tensor idioms; this runs them along a chain."""

from __future__ import annotations

import torch

from .ops import REGISTRY


def run_chain(spec: dict, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The oracle's outputs of a validated spec (JSON form) on the given inputs, by name: y is the row
    after the last op that changes it."""
    v = inputs["x"].double()
    outputs: dict[str, torch.Tensor] = {}
    for op in spec["op"]:
        step = REGISTRY[op["kind"]]
        if not step.transforms_row:
            outputs.setdefault("y", v)
        v, extra = step.oracle_step(v, op, inputs, spec.get("head_dim"))
        outputs.update(extra)
    outputs.setdefault("y", v)
    return outputs
