"""probe51: do column-major scales in small groups run faster when a block holds several rows, and does it
take staging them in shared memory? perf/probe50 measured six held-out rows at 0.32–0.67 × copy with
column-major scales and 0.87–1.01 with the same scales row-major: a block of one row stores its scales
one group at a time, M scales apart, each store a partial write of its own sector.

    git worktree add /tmp/oldwt 266c4a9          (the tree before staged scale stores)
    .venv/bin/python perf/probe51/build.py /tmp/oldwt perf/probe51/kernels

Specs: probe50's six rows and a fresh draw of DRAWN specs whose quantisation writes column-major group
scales (scripts/random_hunt.py's draws, unhinted, seed SEED, the pinned token count dropped so every spec is
timed at its sweep count). Each, into kernels/time/kernels (timed by perf/proto/probe_time.py):
- NAME_planned: the planner's schedule (this tree);
- NAME_bm2s, _bm4s, _bm8s: block_m rows a block, each on the planner's threads (threads = block_m × the
  planner's, up to 1024), scales staged in shared memory (this tree: quant_fp8.staged_scales);
- NAME_bm2u, _bm4u, _bm8u (the six only): the same blocks, scales stored from registers (the old tree);
- NAME_rowscales: the planner's schedule writing the same scales row-major (what the layout costs);
- NAME_old: the old tree's plan, where the planner gave the row several rows a block already.
The staged builds are also written to kernels/check/kernels for scripts/gpu_hunt.py check."""

from __future__ import annotations

import random
import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "perf" / "probe50"))
import random_hunt  # noqa: E402
from build_rules import COLUMN_SCALES, build  # noqa: E402  (probe50's six rows, its untuned build)
from test_injection import dump  # noqa: E402

from fusegen.plan import plan  # noqa: E402
from fusegen.spec import parse_spec  # noqa: E402

SEED = 5101
DRAWN = 12
WIDTHS = (1536, 2560, 2880, 3584, 4096, 5120, 6144, 7168, 8192, 10240, 12288, 14336)
BLOCK_ROWS = (2, 4, 8)


def column_group_scales(spec: dict) -> bool:
    return any(
        op["kind"] == "quant_fp8" and op.get("scale_layout") == "column" and op.get("group_size", "token") != "token" for op in spec["op"]
    )


def drawn_specs(seed: int = SEED, count: int = DRAWN, keep=column_group_scales, widths=WIDTHS, prefix: str = "col") -> list[dict]:
    """`count` unhinted draws of `seed` (half of them at `widths`) that `keep` keeps, named PREFIX_SEED_NN,
    their token count dynamic."""
    found = []
    for spec, _ in random_hunt.planned_draws(random.Random(seed), 0.0, widths):
        if keep(spec):
            spec.pop("tokens", None)
            spec["name"] = f"{prefix}_{seed}_{len(found):02d}"
            found.append(spec)
            if len(found) == count:
                return found


def variant(base: dict, suffix: str, hints: dict | None = None, **quant) -> dict:
    spec = dict(base, name=f"{base['name']}_{suffix}", schedule=dict(base.get("schedule", {}), **(hints or {})))
    spec["op"] = [dict(op, **quant) if op["kind"] == "quant_fp8" else op for op in base["op"]]
    return spec


def main(old_tree: Path, out: Path) -> None:
    bases = [(tomllib.loads((ROOT / path).read_text()), True) for path in COLUMN_SCALES] + [(s, False) for s in drawn_specs()]
    new, old = out / "specs_new", out / "specs_old"
    new.mkdir(parents=True)
    old.mkdir()
    for base, unstaged_too in bases:
        text = dump(base)
        schedule = plan(parse_spec(text, base["name"]), base["name"]).routes[-1].schedule
        wanted = [(new, variant(base, "planned")), (new, variant(base, "rowscales", scale_layout="row"))]
        if schedule.block_m > 1:
            wanted.append((old, variant(base, "old")))
        for rows in BLOCK_ROWS:
            threads = rows // schedule.block_m * schedule.threads
            if rows <= schedule.block_m or threads > 1024:
                continue
            hints = {"variant": "fragment", "block_m": rows, "threads": threads}
            wanted.append((new, variant(base, f"bm{rows}s", hints)))
            if unstaged_too:
                wanted.append((old, variant(base, f"bm{rows}u", hints)))
        for directory, spec in wanted:
            (directory / f"{spec['name']}.toml").write_text(dump(spec))
    timed = out / "time" / "kernels"
    build(ROOT, new.resolve(), timed.resolve())
    build(old_tree, old.resolve(), (out / "built_old").resolve())
    for package in (out / "built_old").iterdir():
        if (package / "plan.json").is_file():
            package.rename(timed / package.name)
    checked = out / "check" / "kernels"
    checked.mkdir(parents=True)
    for package in timed.iterdir():
        if package.name.endswith("s") and "_bm" in package.name:
            shutil.copytree(package, checked / package.name)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
