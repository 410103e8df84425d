"""Residual add: s = x + residual in float32, rounded to the activation dtype; the chain goes on from s.

Every decoder layer of Llama, Qwen and DeepSeek opens its norms this way (`hidden = residual + hidden`,
then the norm): the residual stream is stored in the activation dtype, so the norm reads the rounded
sum, and the sum leaves as `residual_out`, the updated stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..codegen import KernelFrame, string_literal
from ..cuda_checks import Check, row_access
from ..model import TORCH_DTYPE, Dim, Schedule, Scratch, Stage, Tensor
from . import RESIDUAL_ADD, ChainContext, Op, OpSpec, OutputDecl, kind_field, register


class AddResidualSpec(OpSpec):
    kind: Literal["add_residual"] = kind_field("add_residual")


@dataclass(frozen=True)
class Exact:
    """Bit for bit: the kernel and the reference compute the same correctly rounded value."""

    reason: str

    def check(self, name, got, want, dtype, oracle_rows=None) -> None:
        import torch

        torch.testing.assert_close(got[name], want[name], atol=0, rtol=0, msg=lambda m: f"{name}: {m}")


EXACT_SUM = Exact(
    "x + residual of two fp16 or bf16 values is exact in float32 unless their exponents lie so far apart "
    "(over 13 or 16 binades) that the smaller is far below half an ulp of the larger, where both the exact "
    "and the float32 sum round to the larger: one rounding to the dtype gives the correctly rounded sum in "
    "kernel and reference alike. float32 activations: one IEEE addition, the same in both. So atol = rtol = 0."
)
RESIDUAL_OUT = OutputDecl(
    "residual_out",
    "residual",
    "Write residual_out = x + residual rounded to dtype, the updated residual stream (M, hidden) (default: true with add_residual).",
    EXACT_SUM,
    default=True,
)


def plan(op: AddResidualSpec, index: int, ctx: ChainContext) -> Stage:
    rows = (Dim(tokens=True), Dim(size=ctx.hidden))
    writes = ctx.outputs.get("residual", False)
    outputs = (
        Tensor("ResidualOut", "residual_out", ctx.dtype, rows, "output", "x + residual rounded to dtype: the updated residual stream"),
    )
    return Stage(
        index=index,
        kind="add_residual",
        summary=f"x + residual, rounded to {ctx.dtype}",
        params={"writes_residual": writes},
        inputs=(Tensor("Residual", "residual", ctx.dtype, rows, "input", "the residual stream, one row per token"),),
        outputs=outputs if writes else (),
        scratch=(
            Scratch(
                "residual_row",
                "fragment",
                ctx.rows(ctx.padded_hidden),
                ctx.dtype,
                "the residual row in the row's layout, then the rounded sum",
            ),
        ),
        decisions=(
            "the residual row is read into registers in the row's own thread layout and vectors (x's), in the "
            "stream variant too: each thread reads its residual elements before it writes the same elements of "
            "residual_out, so residual_out may be the residual tensor itself (the in-place update servers use). Not "
            "through the stream ring: that would make the ring a row larger per slot, fewer blocks per SM.",
        ),
    )


def emit_kernel(stage: Stage, frame: KernelFrame) -> list[str]:
    each_column, at = frame.loop(("j", frame.columns)), frame.at("j")
    (residual,) = stage.inputs
    dtype = string_literal(residual.dtype)
    summed = f'row[{at}] + T.cast(residual_row[{at}], "float32")'
    lines = [
        frame.alloc("residual_row"),
        frame.pin_row_layout("residual_row"),
        *frame.load_row("Residual", "residual_row"),
        # Rounded once to the dtype the stream is stored in; the norm reads that value, as the model does.
        each_column,
        f"    residual_row[{at}] = T.cast({summed}, {dtype})",
    ]
    if stage.params["writes_residual"]:
        lines += frame.store_row("residual_row", "ResidualOut")
    return lines + [each_column, f'    row[{at}] = T.cast(residual_row[{at}], "float32")']


def emit_reference(stage: Stage, hidden: int) -> list[str]:
    (residual,) = stage.inputs
    lines = [f"stream = (v + residual.float()).to({TORCH_DTYPE[residual.dtype]})"]
    if stage.params["writes_residual"]:
        lines.append('out["residual_out"] = stream')
    return lines + ["v = stream.float()"]


class AddResidual(Op[AddResidualSpec]):
    kind = "add_residual"
    spec = AddResidualSpec
    place = RESIDUAL_ADD
    transforms_row = True
    outputs = (RESIDUAL_OUT,)
    row_output = "residual_out"
    staged_inputs = False
    readme_keys = (
        "no keys: input `residual` (M, hidden) of the dtype; x + residual in fp32, rounded to the dtype (the norm reads "
        "that), written as `residual_out` unless `[outputs] residual = false`"
    )
    plan = staticmethod(plan)
    emit_kernel = staticmethod(emit_kernel)
    emit_reference = staticmethod(emit_reference)

    def tile_rule(self, op, ctx, tile_columns):
        # The norm's passes over the tiles read x alone; the sum they would need is this op's row.
        return "comes before the norm, whose passes over the tiles read x alone, not x + residual"

    def oracle_step(self, v, op, inputs, head_dim):
        # float64 holds the sum of two activations exactly (or within far less than half an ulp of the
        # dtype), so one rounding to the dtype is the correctly rounded sum.
        stream = (v + inputs["residual"].double()).to(inputs["residual"].dtype)
        return stream.double(), {"residual_out": stream}

    def sample_inputs(self, op, shapes, draw):
        return {"residual": draw.normal(shapes["residual"])}

    def cuda_checks(self, stage: Stage, source: str, schedule: Schedule) -> list[Check]:
        checks = [row_access(source, "Residual", schedule.vector_bytes, "residual loads")]
        if stage.params["writes_residual"]:
            checks.append(row_access(source, "ResidualOut", schedule.vector_bytes, "residual stores"))
        return checks


OP = register(AddResidual())
