"""Writes perf/variants17: the model specs whose chains need no whole row (per-head QK-norm and RoPE, MLA
q_b's RoPE) and two sweep-like per-head chains, each at every row_split that keeps parts of whole heads
and groups up to 32, and the two sweep-like ones as the planner routes them (`_auto`) — the data behind
the planner's split for few tokens (issue 14: MLA q_b at 8 tokens 0.88× torch.compile)."""

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "perf" / "variants17"
MODELS = ("deepseek-v3-mla-q-b", "qwen3-8b-q", "qwen3-8b-k", "gemma-3-12b-q")
EXTRA = {
    "rope_g128_bf16_7168": (
        'name = "rope_g128_bf16_7168"\ndtype = "bfloat16"\nhidden = 7168\nhead_dim = 128\n\n'
        '[[op]]\nkind = "rope"\nrope_dim = 64\nspan = "tail"\n\n[[op]]\nkind = "quant_fp8"\ngroup_size = 128\n\n'
        "[outputs]\ny = false\n"
    ),
    "qk_norm_rope_f16_2048": (
        'name = "qk_norm_rope_f16_2048"\ndtype = "float16"\nhidden = 2048\nhead_dim = 128\n\n'
        '[[op]]\nkind = "rmsnorm"\nover = "head"\n\n[[op]]\nkind = "rope"\nrope_dim = 128\n'
    ),
}


def main() -> None:
    OUT.mkdir(exist_ok=True)
    bases = {m: (ROOT / "specs" / "models" / f"{m}.toml").read_text() for m in MODELS} | EXTRA
    for base, text in bases.items():
        spec = tomllib.loads(text)
        unit = spec.get("head_dim") or 1
        if base in EXTRA:  # the planner's own routes (the models' are specs/models themselves)
            (OUT / f"{spec['name']}_auto.toml").write_text(text)
        for split in (1, 2, 4, 7, 8, 16, 32):
            if spec["hidden"] % (split * unit):
                continue
            name = f"{spec['name']}_split{split}"
            body = text.replace(f'name = "{spec["name"]}"', f'name = "{name}"', 1)
            body = body.rstrip("\n") + f"\n\n[schedule]\nrow_split = {split}\n"
            (OUT / f"{name}.toml").write_text(body)
    print(len(list(OUT.glob("*.toml"))), "specs in", OUT, file=sys.stderr)


if __name__ == "__main__":
    main()
