"""Writes perf/probe23's census: specs the planner has never been timed on — random chains of the sweep's
kinds (scripts/sweep_specs.py fills their keys) at model widths the sweep does not have — for one untuned
run against the copy ceiling at the sweep's counts.

    python perf/probe23/census_specs.py OUT_DIR [--seed N] [--count N] [--widths W,W,...]
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import sweep_specs  # noqa: E402

# Hidden sizes of released models (and their per-head q/k widths) that scripts/sweep_specs.py's WIDTHS
# lack: SmolLM 576/960, Gemma 3 640/1152/2560/5376, Qwen2.5 896/3584, Gemma 2 2304/4608, Llama 3.2 3072
# (in the sweep), Mistral 5120 (in), gpt-oss 2880 (in), Qwen3 q/k 4096/1024, Llama 405B 16384 (in)…
WIDTHS = (576, 640, 896, 960, 1152, 1280, 1792, 2304, 3200, 4608, 5376, 6656, 9216, 10240, 14336)


def generate(seed: int, count: int, widths: tuple[int, ...] = WIDTHS) -> dict[str, dict]:
    rng = random.Random(seed)
    specs = {}
    while len(specs) < count:
        label, kinds = rng.choice(sweep_specs.CHAINS)
        dtype = rng.choice(sweep_specs.DTYPES)
        hidden = rng.choice(widths)
        ops = [sweep_specs._op(kind, label, hidden, rng) for kind in kinds]
        spec = {"name": "", "dtype": dtype, "hidden": hidden, "op": ops}
        if label == "qk_norm_rope":
            dims = [d for d in sweep_specs.HEAD_DIMS if hidden % d == 0 and d >= ops[1]["rope_dim"]]
            if not dims:
                continue
            spec["head_dim"] = rng.choice(dims)
        if "quant_fp8" in kinds or "rope" in kinds:
            spec["outputs"] = {"y": label.endswith("_y") or "quant_fp8" not in kinds}
        name = f"c{len(specs):02d}_{label}_{dtype.replace('float', 'f')}_{hidden}"
        spec["name"] = name
        specs[name] = spec
    return specs


def main() -> int:
    return cli(generate, 23, 80, "perf/probe23's census (census_specs.py --seed {seed})", WIDTHS)


def cli(generate_specs, seed: int, count: int, origin: str, widths: tuple[int, ...] | None = None) -> int:
    """A census script's command line, OUT_DIR [--seed N] [--count N] (and [--widths W,W,...] where `widths`
    is its default): `generate_specs(seed, count[, widths])` written by `write`, `origin` formatted with the seed."""
    parser = argparse.ArgumentParser()
    parser.add_argument("out_dir")
    parser.add_argument("--seed", type=int, default=seed)
    parser.add_argument("--count", type=int, default=count)
    if widths is not None:
        parser.add_argument("--widths", type=lambda text: tuple(int(w) for w in text.split(",")), default=widths)
    args = parser.parse_args()
    specs = generate_specs(args.seed, args.count, *((args.widths,) if widths is not None else ()))
    write(Path(args.out_dir), specs, origin.format(seed=args.seed))
    return 0


def write(out: Path, specs: dict[str, dict], origin: str) -> None:
    """Each spec as OUT/NAME.toml, its first line naming `origin`."""
    out.mkdir(parents=True, exist_ok=True)
    for name, spec in specs.items():
        body = sweep_specs.to_toml(spec, 0).split("\n", 1)[1]
        (out / f"{name}.toml").write_text(f"# {origin}: timed untuned\n{body}")


if __name__ == "__main__":
    sys.exit(main())
