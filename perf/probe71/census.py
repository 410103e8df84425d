"""probe71: a CPU census of ptxas's registers and spills on the planner's own programs for chains it was not
fitted to: a fresh draw of the generator's chains (seed 7101, half of them at 3072–16384 columns), built
untuned as a user's new spec is (`fusegen build`, which reads each program's registers and stack frame from
the compiled cubin, compile.ptxas_resources), and the lines that name a spill collected with their spec.
No GPU: what it finds is where a planner program spills, for a device call to time.

    .venv/bin/python perf/probe71/census.py perf/probe71/kernels 120 > perf/probe71/census.md"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "perf" / "proto"))
from probe_scripts import probe_script  # noqa: E402  (a sibling script)

SEED = 7101
WIDTHS = tuple(range(3072, 16385, 256))
SPILLED = re.compile(r"! (program_\d+): ptxas spilled \((\d+) B of stack frame at (\d+) registers a thread\)")


def main(out: Path, count: int) -> None:
    specs = out / "specs"
    specs.mkdir(parents=True)
    probe51 = probe_script("probe51")
    dump = probe_script("probe52").dump
    for spec in probe51.drawn_specs(SEED, count, lambda spec: True, widths=WIDTHS, prefix="census71"):
        (specs / f"{spec['name']}.toml").write_text(dump(spec))
    untuned = out / "no-tuning.json"
    untuned.write_text("{}")
    built = subprocess.run(
        [sys.executable, "-m", "fusegen", "build", str(specs), "--out", str(out / "kernels"), "--tuning", str(untuned)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    (out / "build.log").write_text(built.stdout + built.stderr)
    print(f"# probe71: ptxas spills among {count} drawn specs (seed {SEED}), untuned\n")
    print("| spec | dtype | hidden | chain | program | stack frame | registers | schedule line |")
    print("|---|---|---:|---|---|---:|---:|---|")
    current = None
    for line in built.stdout.splitlines():
        if line.startswith("census71_"):
            current = line
        elif (found := SPILLED.search(line)) and current:
            name = current.split()[0]
            text = (specs / f"{name}.toml").read_text()
            dtype = re.search(r'^dtype = "(\w+)"', text, re.M)[1]
            hidden = re.search(r"^hidden = (\d+)", text, re.M)[1]
            chain = " → ".join(re.findall(r'^kind = "(\w+)"', text, re.M))
            print(f"| {name} | {dtype} | {hidden} | {chain} | {found[1]} | {found[2]} B | {found[3]} | {' '.join(current.split()[1:6])} |")
    print(
        f"\nbuild exit status {built.returncode}; {sum(1 for line in built.stdout.splitlines() if line.startswith('census71_'))} kernels reported"
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
