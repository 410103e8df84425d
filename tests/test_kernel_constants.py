"""kernel.py binds the values a reader looks for to names, and the programs use the names."""

from __future__ import annotations

import ast
import random

from fusegen.emit import kernel_module
from fusegen.plan import plan
from fusegen.spec import KernelSpec


def _module_constants(source: str) -> dict[str, object]:
    tree = ast.parse(source)
    return {
        node.targets[0].id: ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id.isupper()
        and isinstance(node.value, ast.Constant)
    }


def test_constants_carry_the_spec_values_and_replace_the_literals():
    rng = random.Random()
    eps, floor = rng.uniform(1e-7, 1e-3), rng.uniform(1e-9, 1e-4)
    rope_dim, group = rng.choice((32, 64, 128)), rng.choice((64, 128))
    spec = KernelSpec.model_validate(
        {
            "name": "constants",
            "dtype": "bfloat16",
            "hidden": 4096,
            "op": [
                {"kind": "rmsnorm", "eps": eps},
                {"kind": "rope", "rope_dim": rope_dim},
                {"kind": "quant_fp8", "group_size": group, "fp8": "e5m2", "amax_floor": floor},
            ],
        }
    )
    source = kernel_module(plan(spec, "specs/constants.toml"))
    constants = _module_constants(source)
    assert (
        constants
        | {
            "HIDDEN": 4096,
            "EPS": eps,
            "AMAX_FLOOR": floor,
            "FP8_MAX": 57344.0,
            "GROUP_SIZE": group,
            "ROPE_DIM": rope_dim,
            "ROPE_HALF": rope_dim // 2,
            "ROPE_START": 4096 - rope_dim,
        }
        == constants
    )
    # The code of the program factories and programs; their section comments name the op's settings in words.
    programs = "\n".join(
        line
        for line in source[source.index("Outputs = output_tuple(OUTPUTS)") : source.index("ROUTES =")].splitlines()
        if not line.lstrip().startswith(("#", '"""'))
    )
    for literal in (repr(eps), repr(floor), "57344.0", f"{4096 - rope_dim} + j"):
        assert literal not in programs, literal
    assert "rstd[0] * (1.0 / HIDDEN) + EPS" in programs and "ROPE_START + j" in programs and "j // GROUP_SIZE" in programs
