"""probe126 (session 64): fp32 add → RMSNorm at 256 tokens in a CUDA graph of back-to-back calls — where the 1–5 %
torch.compile gains there goes, now that perf/probe124 found fusegen's kernel as fast as torch.compile's under ncu.
Builds the two sweep rows untuned (the planner's program) and on other thread counts (the `threads` hint; for 3072
also the full tune's winner of session 63, 192 threads and three blocks an SM), each a package of its own.

    .venv/bin/python perf/probe126/build.py        # CPU: perf/probe126/kernels (git-ignored)"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "perf/probe126"
for sibling in ("tests", "perf/probe50"):
    sys.path.insert(0, str(ROOT / sibling))
from build_rules import build  # noqa: E402
from test_injection import dump  # noqa: E402

# (sweep spec, its variants: name suffix → schedule hints; "planner" takes none)
VARIANTS = {
    "sweep_add_rms_f32_3072": {
        "planner": {},
        "t256": {"variant": "fragment", "threads": 256},
        "t192b3": {"variant": "fragment", "threads": 192, "blocks_per_sm": 3},
        "t384": {"variant": "fragment", "threads": 384},
    },
    "sweep_add_rms_f32_6144": {
        "planner": {},
        "t512": {"variant": "fragment", "threads": 512},
        "t384": {"variant": "fragment", "threads": 384},
    },
}


def main() -> None:
    specs = HERE / "kernels/specs"
    specs.mkdir(parents=True, exist_ok=True)
    for sweep_name, variants in VARIANTS.items():
        spec = tomllib.loads((ROOT / "perf/sweep" / f"{sweep_name}.toml").read_text())
        for suffix, hints in variants.items():
            variant = dict(spec, name=f"{sweep_name}_{suffix}", **({"schedule": hints} if hints else {}))
            (specs / f"{variant['name']}.toml").write_text(dump(variant))
    build(ROOT, specs.resolve(), (HERE / "kernels/built").resolve())


if __name__ == "__main__":
    main()
