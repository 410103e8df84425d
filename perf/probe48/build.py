"""probe48: wide plain RMSNorm rows read in tiles (variant reread) spill. perf/probe47's held-out draw ran bf16
RMSNorm 18432 at 0.26 × copy: its reread program (384 threads, six tiles, a bound of four blocks: 40
registers) spilled 416 bytes — nvcc unrolls the finishing loop of a chain with nothing but the norm (no
branch, no barrier in it), reuses the statistics pass's loads, and holds every tile's words. ptxas -v on the
planner's programs: plain RMSNorm (Y written) spills from four bf16 tiles (132 bytes at 15360–16384) and
from eight float32 tiles; RMSNorm → FP8 and RMSNorm → RoPE → FP8 of the same widths do not.

Programs per spec, from the planner's own (`cur`) by editing its kernel.py:
  u1    the finishing loop kept a loop (`T.unroll(tiles, unroll_factor=1)`: #pragma unroll 1): each tile read
        again from L2, nothing held
  bN    the launch bound at N blocks an SM instead of the planner's (more registers a thread)
  frag  the fragment program (variant = "fragment"): the row held in registers, the default before the
        reread rule

    python perf/probe48/build.py OUT_DIR        (compiles each for sm_90a and prints ptxas's registers and spills)
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import tilelang

from fusegen.emit import render
from fusegen.plan import plan
from fusegen.spec import parse_spec

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "proto"))
from ptx_census import INCLUDES  # noqa: E402

SHORT = {"bfloat16": "bf16", "float16": "f16", "float32": "f32"}
CHAINS = {
    "rms": '[[op]]\nkind = "rmsnorm"\n',
    "rmsq": '[[op]]\nkind = "rmsnorm"\n\n[[op]]\nkind = "quant_fp8"\ngroup_size = 128\n\n[outputs]\ny = false\n',
}
SPECS = (
    [("rms", "bfloat16", w) for w in (12288, 15360, 16384, 18432, 20480, 24576)]
    + [("rms", "float16", 16384)]
    + [("rms", "float32", w) for w in (10240, 13824, 16384, 18432, 24576)]
    + [
        ("rmsq", "bfloat16", 18432),
        ("rmsq", "bfloat16", 24576),
    ]
)


def spec_text(chain: str, dtype: str, hidden: int, name: str, hints: str = "") -> str:
    return f'name = "{name}"\ndtype = "{dtype}"\nhidden = {hidden}\n\n{CHAINS[chain]}' + (f"\n[schedule]\n{hints}" if hints else "")


def ptxas(source: str) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        cu = Path(scratch) / "k.cu"
        cu.write_text(source)
        log = subprocess.run(
            [
                "nvcc",
                "-cubin",
                "-arch=sm_90a",
                "-O3",
                "-std=c++17",
                *INCLUDES,
                str(cu),
                "-o",
                str(cu.with_suffix(".cubin")),
                "-Xptxas",
                "-v",
            ],
            capture_output=True,
            text=True,
        ).stderr
    registers = re.search(r"Used (\d+) registers", log).group(1)
    spilled = re.search(r"(\d+) bytes spill stores", log).group(1)
    return f"{registers} registers, {spilled} bytes spilled"


def write(out: Path, name: str, files: dict[str, str]) -> None:
    target = out / name
    target.mkdir(exist_ok=True)
    for file, text in files.items():
        (target / file).write_text(text)
    module = importlib.import_module(f"{name}.kernel")
    source = tilelang.compile(module.program_0(), target={"kind": "cuda", "arch": "sm_90a"}).get_kernel_source()
    (target / "kernel.cu").write_text(source)
    print(f"{name:32s} {ptxas(source)}", flush=True)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "__init__.py").touch()
    sys.path.insert(0, str(out))
    for chain, dtype, hidden in SPECS:
        stem = f"{chain}_{SHORT[dtype]}_{hidden}"
        files = render(plan(parse_spec(spec_text(chain, dtype, hidden, f"{stem}_cur"), "p.toml"), "p.toml"))
        kernel = files["kernel.py"]
        assert "reread" in kernel, stem
        write(out, f"{stem}_cur", files)
        finishing = re.findall(r"for tile in T\.(?:unroll|serial)\(tiles\):", kernel)[-1]
        write(out, f"{stem}_u1", renamed(files, f"{stem}_u1", finishing, "for tile in T.unroll(tiles, unroll_factor=1):"))
        bound = re.search(r"T\.annotate_min_blocks_per_sm\(\d+\)", kernel).group(0)
        for blocks in range(int(bound.split("(")[1][:-1]) - 1, 1, -1):
            write(out, f"{stem}_b{blocks}", renamed(files, f"{stem}_b{blocks}", bound, f"T.annotate_min_blocks_per_sm({blocks})"))
        name = f"{stem}_frag"
        write(out, name, render(plan(parse_spec(spec_text(chain, dtype, hidden, name, 'variant = "fragment"\n'), "p.toml"), "p.toml")))


def renamed(files: dict[str, str], name: str, old: str, new: str) -> dict[str, str]:
    """The `_cur` package's files under `name` (the identity in each file with it), kernel.py edited."""
    current = re.search(r'NAME = "(\w+)"', files["kernel.py"]).group(1)
    edited = {file: text.replace(current, name) for file, text in files.items()}
    assert old in edited["kernel.py"], old
    edited["kernel.py"] = edited["kernel.py"].replace(old, new)
    return edited


if __name__ == "__main__":
    main(Path(sys.argv[1]))
