"""Everything about an op lives in its module under fusegen/ops/: nothing else names an op kind or an
op's output, every output has a tolerance class, and the generic machinery asks the ops."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from fusegen import checking
from fusegen.ops import REGISTRY, Op
from fusegen.plan import plan
from fusegen.spec import KernelSpec

PACKAGE = Path(__file__).resolve().parent.parent / "fusegen"


def op_words() -> tuple[set[str], set[str]]:
    """(every registered kind, every output name and [outputs] flag an op declares)."""
    outputs = {name for op in REGISTRY.values() for out in op.outputs for name in (out.arg, out.flag) if name}
    return set(REGISTRY), outputs


def naming_an_op(source: str) -> list[str]:
    """Where a source names an op: an identifier with a kind as one of its `_`-separated parts, a string
    literal (docstrings aside: they are prose, like comments) holding a kind as a word, or a string
    literal that is exactly an op's output name."""
    kinds, outputs = op_words()
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        identifiers = []
        if isinstance(node, ast.Name):
            identifiers = [node.id]
        elif isinstance(node, ast.Attribute):
            identifiers = [node.attr]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            identifiers = [node.name]
        elif isinstance(node, ast.arg):
            identifiers = [node.arg]
        elif isinstance(node, ast.alias):
            identifiers = [node.asname or node.name]
        for identifier in identifiers:
            found += [
                f"line {node.lineno}: identifier {identifier}" for kind in kinds if re.search(rf"(^|_){kind}(_|$)", identifier.lower())
            ]
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            for kind in kinds:
                if re.search(rf"(?<![A-Za-z0-9_]){kind}(?![A-Za-z0-9_])", node.value):
                    found.append(f"line {node.lineno}: string {node.value!r} names {kind}")
            if node.value in outputs:
                found.append(f"line {node.lineno}: string {node.value!r} is an op's output")
    return found


def test_the_detector_finds_an_op_named_outside_its_module():
    kind = next(iter(REGISTRY))
    output = next(out.arg for op in REGISTRY.values() for out in op.outputs)
    assert naming_an_op(f"if op.kind == {kind!r}:\n    pass\n")
    assert naming_an_op(f"def check_{kind}(stage):\n    pass\n")
    assert naming_an_op(f"x = got[{output!r}]\n")
    assert naming_an_op(f"message = f'no {{x}} before {kind}, so'\n")
    assert not naming_an_op(f'"""A docstring may say {kind}."""\n# and so may a comment: {kind}\n')


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_nothing_outside_ops_names_an_op(path):
    assert naming_an_op(path.read_text()) == [], f"{path.name} names an op: that belongs in fusegen/ops/<op>.py"


def test_every_op_implements_the_typed_interface():
    for kind, op in REGISTRY.items():
        assert isinstance(op, Op) and not inspect.isabstract(type(op)), kind
        assert op.kind == kind and op.spec.model_fields["kind"].annotation.__args__ == (kind,)
        for out in op.outputs:
            assert out.tolerance.reason, f"{kind}.{out.arg}: a tolerance says why it is tight enough"


def test_compare_fails_on_an_output_without_a_tolerance_class():
    module = SimpleNamespace(OUTPUTS=[SimpleNamespace(name="y"), SimpleNamespace(name="unheard_of")])
    values = [torch.randn(4, 16), torch.randn(4, 16)]
    with pytest.raises(LookupError, match="'unheard_of' has no tolerance class"):
        checking.compare(module, values, [v.clone() for v in values], "float32")


def test_the_small_variant_asks_each_op_to_shrink():
    spec = KernelSpec.model_validate(
        {
            "name": "big",
            "dtype": "bfloat16",
            "hidden": 7168,
            "tokens": 77,
            "schedule": {"threads": 512},
            "op": [{"kind": "rmsnorm"}, {"kind": "rope", "rope_dim": 64, "style": "gptj"}, {"kind": "quant_fp8", "group_size": 896}],
        }
    )
    small = checking.small_variant(spec.model_dump(mode="json"))
    assert (small.hidden, small.tokens, small.schedule.threads) == (checking.SEED_SMALL["hidden"], None, "auto")
    rope, quant = small.op[1], small.op[2]
    assert (rope.rope_dim, rope.style) == (32, "gptj")
    assert quant.group_size == 128  # gcd(896, 256): the largest group dividing both


def test_the_small_variant_keeps_the_variant_only_where_it_holds_the_small_width():
    """A reread RMSNorm of 4096 columns shrinks to 256, one tile — fewer than the two a reread takes: the
    small variant takes the planner's variant instead of failing the generated GPU test. Heads of 96
    streamed at 768 columns shrink to 192 (two heads), which the stream holds padded: stream stays."""
    reread = {"name": "reread", "dtype": "bfloat16", "hidden": 4096, "schedule": {"variant": "reread"}, "op": [{"kind": "rmsnorm"}]}
    assert plan(KernelSpec.model_validate(reread), "<test>").routes[-1].schedule.variant == "reread"
    small = checking.small_variant(reread)
    assert (small.hidden, small.schedule.variant) == (256, "auto")
    plan(small, "<test>")
    heads = {"name": "heads96", "dtype": "bfloat16", "hidden": 768, "head_dim": 96, "schedule": {"variant": "stream"}}
    small = checking.small_variant({**heads, "op": [{"kind": "rope", "rope_dim": 32}]})
    assert (small.hidden, small.schedule.variant) == (192, "stream")
    assert plan(small, "<test>").routes[-1].schedule.padded_hidden == 256


def test_a_failed_check_names_the_seed_that_replays_it(tmp_path):
    spec = {"name": "seeded", "dtype": "float32", "hidden": 256, "op": [{"kind": "rmsnorm"}]}
    real = checking.build_variant(KernelSpec.model_validate(spec), tmp_path)

    def off_by_a_little(*inputs, out):
        for target, value in zip(out, real.reference(*inputs)):
            target.copy_(value)
        out[0][1, 3] += 0.5

    fake = SimpleNamespace(
        __file__=real.__file__,
        INPUTS=real.INPUTS,
        OUTPUTS=real.OUTPUTS,
        Outputs=real.Outputs,
        reference=real.reference,
        kernel=off_by_a_little,
    )
    with pytest.raises(AssertionError, match=r"seed (\d+)") as first:
        checking.run_and_compare(fake, 5, device="cpu")
    seed = int(re.search(r"seed (\d+)", str(first.value)).group(1))
    with pytest.raises(AssertionError) as replay:
        checking.run_and_compare(fake, 5, seed=seed, device="cpu")
    assert str(replay.value) == str(first.value), "the seed replays the same inputs, so the same failure"


def test_the_readme_ops_table_is_the_ops_own_rows():
    readme = (PACKAGE.parent / "README.md").read_text()
    table = readme.split("\nOps:\n", 1)[1].split("\n\n", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    in_chain_order = sorted(REGISTRY.values(), key=lambda op: op.place.order)
    assert rows == [f"| `{op.kind}` | {op.readme_keys} |" for op in in_chain_order]


def test_the_schedule_hints_and_outputs_are_one_list_everywhere():
    """ScheduleHints is the list of hints: tuning's winners record each of them, and the README's spec
    table documents each; the [outputs] keys are y and what the ops declare."""
    from fusegen.spec import Outputs, ScheduleHints
    from fusegen.tuning import WinnerHints

    readme = (PACKAGE.parent / "README.md").read_text()
    assert set(WinnerHints.model_fields) == set(ScheduleHints.model_fields)
    assert set(re.findall(r"^\| `\[schedule\] (\w+)` \|", readme, re.M)) == set(ScheduleHints.model_fields)
    assert set(re.findall(r"^\| `\[outputs\] (\w+)` \|", readme, re.M)) == set(Outputs.model_fields)
    assert list(Outputs.model_fields) == ["y", *sorted({out.flag for op in REGISTRY.values() for out in op.outputs if out.flag})]
