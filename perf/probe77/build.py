"""probe77: per-head statistics over heads whose lanes are not a power of two, summed in power-of-two slices
whose sums the head adds through shared memory (norm.head_slice), so that 16-byte vectors hold them. Before,
only layouts on which one butterfly sums a whole head were accepted: a bf16 head of 192 columns (24 16-byte
vectors) fell to one column a thread (perf/probe73's held73_7301_02: 0.62 × copy), and some heads (80 in a
row of 1280) had no layout at all.

    git worktree add /tmp/oldwt 0509ac3
    .venv/bin/python perf/probe77/build.py /tmp/oldwt perf/probe77/kernels
    OUT=... ROUNDS=2 bash perf/probe51/call.sh perf/probe77/kernels     # on the device

Specs: perf/probe77/specs (hand-written: every variant and layout the slices meet — rows sharing warps, the
stream and reread variants, slices of one lane, heads spanning tiles, a row split) and a fresh draw (seed
7701) of specs with a per-head norm over heads whose lanes at 16-byte vectors are not a power of two. Each
built by this tree into kernels/check/kernels (checked against its reference) and kernels/time/kernels as
NAME_new; where the old tree builds the spec too, its build beside it as NAME_old (timed in the same run)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "perf" / "proto"))
from probe_scripts import probe_script  # noqa: E402  (a sibling script)
from test_injection import dump  # noqa: E402

SEED, DRAWN = 7701, 16
WIDTHS = (1536, 2304, 2560, 3072, 3840, 4608, 5120, 6144, 7680, 9216, 12288)
ELEMENT_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4}


def sliced_heads(spec: dict) -> bool:
    """A per-head norm whose heads at 16-byte vectors are not a power-of-two number of lanes."""
    lanes = spec.get("head_dim", 0) * ELEMENT_BYTES[spec["dtype"]] // 16
    per_head = any(op.get("over") == "head" for op in spec["op"])
    return per_head and lanes > 0 and lanes & (lanes - 1) != 0


def old_tree_plans(tree: Path, path: Path) -> bool:
    """Whether `fusegen plan` of the old tree accepts the spec (it refused heads no single butterfly sums)."""
    code = f"import sys; sys.path.insert(0, {str(tree)!r}); from fusegen.cli import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", code, "plan", str(path)], cwd=tree, capture_output=True).returncode == 0


def main(old_tree: Path, out: Path) -> None:
    bases = [tomllib.loads(p.read_text()) for p in sorted((Path(__file__).parent / "specs").glob("*.toml"))]
    bases += probe_script("probe51").drawn_specs(SEED, DRAWN, sliced_heads, WIDTHS, "head77")
    old, new = out / "specs_old", out / "specs_new"
    old.mkdir(parents=True)
    new.mkdir()
    for base in bases:
        (new / f"{base['name']}_new.toml").write_text(dump(dict(base, name=f"{base['name']}_new")))
        candidate = old / f"{base['name']}_old.toml"
        candidate.write_text(dump(dict(base, name=f"{base['name']}_old")))
        if not old_tree_plans(old_tree, candidate.resolve()):
            print(f"the old tree refuses {base['name']}: timed new only", flush=True)
            candidate.unlink()
    probe_script("probe50", "build_rules").build(old_tree, old.resolve(), (out / "time" / "kernels").resolve())
    probe_script("probe68").build_new(new, out)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
