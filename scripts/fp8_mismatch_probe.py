"""Where do kernel and reference fp8 codes differ? Prints the quotient v/scale for the first mismatches
(used to settle the code-mismatch tolerance; see NOTES.md)."""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from cases import spec_for  # noqa: E402

from fusegen import checking  # noqa: E402
from fusegen.spec import KernelSpec  # noqa: E402

scratch = Path("/tmp/fp8-probe")
for name in ("quant_alone_g128_block_m2", "quant_alone", "quant_g64_e5m2_ue8m0", "quant_token_y", "quant_g128_bf16_7168"):
    module = checking.build_variant(KernelSpec.model_validate(spec_for(name)), scratch)
    for tokens in (255, 4096):
        inputs = checking.random_inputs(module, tokens, torch.Generator().manual_seed(tokens))
        got = module.kernel(*inputs)
        want = module.reference(*inputs)
        q, rq = got.q.view(torch.uint8), want.q.view(torch.uint8)
        diff = (q != rq).nonzero()
        print(
            f"{name} m={tokens}: {len(diff)} of {q.numel()} codes differ ({len(diff) / q.numel():.2e}); "
            f"scales equal: {torch.equal(got.scale, want.scale)}"
        )
        if "y" in got._fields:
            print(f"   y bitwise equal: {torch.equal(got.y, want.y)}")
        groups = want.scale.shape[1]
        width = q.shape[1] // groups
        for r, c in diff[:6].tolist():
            s = want.scale[r, c // width].item()
            v = want.y[r, c].float().item() if "y" in got._fields else None
            print(
                f"   row {r} col {c}: kernel {got.q[r, c].float().item()} ref {want.q[r, c].float().item()} "
                f"scale {s.hex()} y {v} x {inputs[0][r, c].float().item()}"
            )
