"""probe109's hand-written programs against the generator's: each variant NAME_rR (R ≥ 2) that build.py wrote, and the
same chain built by this tree's fusegen with the schedule hints that ask for it — variant "fragment", the variant's
threads, block_m = R, rows_share_threads = true. Where both compile to the same SASS and registers, the call's
timings of NAME_rR answer for the generator's programs too.

    NVDISASM=/path/to/nvdisasm .venv/bin/python perf/probe109/generator_check.py [KERNELS]   # CPU, after build.py (~3 min)
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent / "proto"))
from issue_estimate import compiled  # noqa: E402  (a sibling script)

from fusegen.compile import cuda_sources_of_file  # noqa: E402


def hinted_spec(planner: Path, name: str, threads: int, rows: int) -> str:
    """The planner's spec (its plan.json) under `name`, with the hints that put `rows` rows on `threads` shared threads."""
    spec = json.loads((planner / "plan.json").read_text())["spec"]
    lines = [f"name = {json.dumps(name)}", f"dtype = {json.dumps(spec['dtype'])}", f"hidden = {spec['hidden']}"]
    for op in spec["op"]:
        lines += ["[[op]]", *(f"{key} = {json.dumps(value)}" for key, value in op.items())]
    # y as the spec has it, and the outputs it asks for (an output its chain lacks may not be named even as false)
    lines += ["[outputs]", *(f"{key} = {json.dumps(value)}" for key, value in spec["outputs"].items() if key == "y" or value)]
    hints = {"variant": "fragment", "threads": threads, "block_m": rows, "rows_share_threads": True}
    lines += ["[schedule]", *(f"{key} = {json.dumps(value)}" for key, value in hints.items())]
    return "\n".join(lines) + "\n"


def main(kernels: Path) -> int:
    variants = sorted(p for p in kernels.iterdir() if re.search(r"_r[2-9]$", p.name))
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        (work / "specs").mkdir()
        (work / "no-tuning.json").write_text("{}\n")
        for variant in variants:
            (source,) = cuda_sources_of_file(variant / "kernel.py")
            threads = int(re.search(r"__launch_bounds__\((\d+)", source)[1])
            planner, rows = variant.name.rsplit("_r", 1)
            # The variant's own name: the kernel's symbol is in its SASS (a RET's target).
            (work / "specs" / f"{variant.name}.toml").write_text(hinted_spec(kernels / planner, variant.name, threads, int(rows)))
        build = [sys.executable, "-m", "fusegen", "build", "specs", "--tuning", "no-tuning.json", "--jobs", "2"]
        subprocess.run(build, cwd=work, check=True, stdout=subprocess.DEVNULL)
        differ = 0
        for variant in variants:
            hand = compiled(cuda_sources_of_file(variant / "kernel.py")[0])
            generated = compiled(cuda_sources_of_file(work / "generated" / variant.name / "kernel.py")[0])
            same = hand.instructions == generated.instructions and hand.registers == generated.registers
            differ += not same
            print(
                f"{variant.name:50} {'same SASS' if same else 'DIFFER'}: {len(hand.instructions)} / {len(generated.instructions)} "
                f"instructions, {hand.registers} / {generated.registers} registers (hand / generator)",
                flush=True,
            )
    print(f"{len(variants) - differ} of {len(variants)} variants compile to the same SASS and registers")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "kernels" / "time" / "kernels"))
