"""probe70: rows that gather a cache row left as fragment programs, not streamed. Since b7bd00d loads the staged
per-token rows on every thread, the fragment program of such a row prefetches its gathered row without the
branch that delayed it; perf/probe69's quick tune of probe68's streamed rows then found the planner's own
fragment program 1.03–1.30 × faster than its stream on 8 of 11 (a gathered row on all but one of them).
Held out here: a fresh draw of chains with cache RoPE (seed 7001, 300 draws, 3072–16384 columns); every
spec whose plan this tree changes, as NAME_old (`old_tree`, which streams it by schedule.wide_stream or
schedule.gathering_stream) and NAME_new (this tree), both untuned, into kernels/time/kernels, the _new ones
also into kernels/check/kernels (their reductions run in another order: checked against their references,
not bit for bit).

    git worktree add /tmp/oldwt c1c55ea
    .venv/bin/python perf/probe70/build.py /tmp/oldwt perf/probe70/kernels"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "perf" / "proto"))
from probe_scripts import probe_script  # noqa: E402  (a sibling script)

SEED, DRAWN = 7001, 300
WIDTHS = tuple(range(3072, 16385, 256))

# Run in a tree's own interpreter path: each spec's schedule on the route of the sweep's token count.
PLANNED = """
import dataclasses, json, sys, tomllib
from pathlib import Path
from fusegen.bench import sweep_tokens
from fusegen.plan import plan
from fusegen.spec import parse_spec
found = {}
for path in sorted(Path(sys.argv[1]).glob("*.toml")):
    spec = tomllib.loads(path.read_text())
    route = plan(parse_spec(path.read_text(), spec["name"]), spec["name"]).route_for(sweep_tokens(spec["hidden"]))
    found[spec["name"]] = {k: v for k, v in dataclasses.asdict(route.schedule).items() if k != "reasons"}
print(json.dumps(found, default=str))
"""


def fitted() -> list[dict]:
    """The rows the streams were fitted on where they had won most (tests/test_default_schedule.py): fp32
    RMSNorm → cache RoPE → FP8 at 6144 and 4096 (perf/probe32, probe34), bf16 QK-norm → cache RoPE at 4608
    whose code crowds four warps (probe32), QK-norm and cache RoPE at 6144–8192 (probe17)."""
    cache = {"kind": "rope", "source": "cache", "max_position": 32768}
    rms, qk_norm, no_y = {"kind": "rmsnorm"}, {"kind": "rmsnorm", "over": "head"}, {"y": False}
    amax_after = [
        [dict(cache, rope_dim=128, span="head"), {"kind": "quant_fp8", "group_size": "token"}],
        [dict(cache, rope_dim=128), {"kind": "quant_fp8", "group_size": 64}],
        [dict(cache, rope_dim=64, style="gptj"), {"kind": "quant_fp8", "group_size": 128}],
        [dict(cache, rope_dim=64), {"kind": "quant_fp8", "group_size": 32}],
    ]
    rows = [("float32", 6144, [rms, *chain], {"outputs": no_y}) for chain in amax_after]
    rows += [("float32", 4096, [rms, *chain], {"outputs": no_y}) for chain in amax_after[2:]]
    rows += [
        ("bfloat16", 4608, [qk_norm, dict(cache, rope_dim=64, span="head")], {"head_dim": 64}),
        ("bfloat16", 4608, [qk_norm, dict(cache, rope_dim=64, span="tail")], {"head_dim": 128}),
        ("bfloat16", 4608, [qk_norm, dict(cache, rope_dim=128, span="head")], {"head_dim": 256}),
        ("bfloat16", 8192, [qk_norm, dict(cache, rope_dim=128)], {"head_dim": 128}),
        ("float16", 7168, [qk_norm, dict(cache, rope_dim=128)], {"head_dim": 128}),
        ("float16", 8192, [rms, dict(cache, rope_dim=64)], {}),
        ("bfloat16", 6144, [rms, dict(cache, rope_dim=64)], {}),
    ]
    return [
        {"name": f"fit70_{k:02d}", "dtype": dtype, "hidden": hidden, **extra, "op": ops}
        for k, (dtype, hidden, ops, extra) in enumerate(rows)
    ]


def gathers(spec: dict) -> bool:
    return any(op["kind"] == "rope" and op.get("source") == "cache" for op in spec["op"])


def planned(tree: Path, specs: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, "-c", PLANNED, str(specs)], env=env, cwd=tree, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def changed(old_tree: Path, bases: list[dict]) -> list[dict]:
    """The specs whose schedule at the sweep's count the two trees plan differently."""
    dump = probe_script("probe52").dump
    with tempfile.TemporaryDirectory() as scratch:
        for base in bases:
            (Path(scratch) / f"{base['name']}.toml").write_text(dump(base))
        old, new = planned(old_tree, Path(scratch)), planned(ROOT, Path(scratch))
    return [base for base in bases if old[base["name"]] != new[base["name"]]]


def main(old_tree: Path, out: Path) -> None:
    drawn = probe_script("probe51").drawn_specs(SEED, DRAWN, gathers, widths=WIDTHS, prefix="held70") + fitted()
    bases = changed(old_tree, drawn)
    print(f"{len(bases)} of {len(drawn)} specs planned differently", flush=True)
    probe_script("probe52").build_changed(old_tree, out, bases)
    shutil.rmtree(out / "built_old")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
