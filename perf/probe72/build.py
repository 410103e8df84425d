"""probe72: a stream's blocks per SM from ptxas's registers instead of the planner's estimate. schedule.with_stream
bounds a stream at the most blocks whose registers leave a thread four fifths of the planner's register
estimate; perf/probe69's tune found two of probe68's streams 1.18–1.42 × faster under four blocks an SM than
under the planner's two (fp16 LayerNorm → RoPE (→ rescale) 6144–7168 on 128 threads), and one 18 % slower
(bf16 add → LayerNorm → cache RoPE → FP8 5120, three → four). The registers ptxas gave each program are in
its compiled library (compile.ptxas_resources, no GPU), so the question is whether a bound read from them —
the most blocks that give each thread the registers ptxas took — is the faster one. Every spec here streams
at its sweep count; NAME_old is the planner's program, NAME_new the same stream under that bound (hints
variant = "stream", its threads, blocks_per_sm), where it allows more blocks than the planner's, into
kernels/time/kernels (perf/proto/probe_time.py); the _new ones also into kernels/check/kernels. bounds.json
records each pair's registers and blocks.

    .venv/bin/python perf/probe72/build.py perf/probe72/kernels
    OUT=... ROUNDS=2 bash perf/probe51/call.sh perf/probe72/kernels     # on the device

Specs: the streams among the sweep, probe68's rows and the first 16 streams of a fresh draw of the generator's
chains (seed 7201, half at 3072–16384)."""

from __future__ import annotations

import json
import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for sibling in ("tests", "scripts", "perf/probe50"):
    sys.path.insert(0, str(ROOT / sibling))
from build_rules import build  # noqa: E402  (an untuned build of a tree)
from test_injection import dump  # noqa: E402

sys.path.insert(0, str(ROOT / "perf" / "proto"))
from probe_scripts import probe_script  # noqa: E402  (a sibling script)

from fusegen.bench import sweep_tokens  # noqa: E402
from fusegen.compile import compiled_programs_of_file  # noqa: E402
from fusegen.errors import ChainError, SpecError  # noqa: E402
from fusegen.plan import plan  # noqa: E402
from fusegen.schedule import MAX_BLOCKS_PER_SM, REGISTER_ALLOCATION_UNIT, SM_REGISTERS, SM_THREADS  # noqa: E402
from fusegen.spec import parse_spec  # noqa: E402

SEED, DRAWN = 7201, 16
WIDTHS = tuple(range(3072, 16385, 256))


def sweep_route(spec: dict):
    """(route index, schedule) of the route at the spec's sweep count, None where the planner refuses the spec."""
    try:
        planned = plan(parse_spec(dump(spec), spec["name"]), spec["name"])
    except (ChainError, SpecError):
        return None
    route = planned.route_for(sweep_tokens(spec["hidden"]))
    return planned.routes.index(route), route.schedule


def streamed_route(spec: dict):
    """sweep_route where it streams, else None."""
    found = sweep_route(spec)
    return found if found and found[1].variant == "stream" else None


def bases() -> list[dict]:
    found = [tomllib.loads(p.read_text()) for p in sorted((ROOT / "perf/sweep").glob("*.toml"))]
    # probe68's draw, re-selected by this planner (its numbering moves with the rows it streams)
    found += [
        dict(spec, name=spec["name"].replace("held68", "held72"))
        for spec, _ in probe_script("probe68").bases()
        if spec["name"].startswith("held")
    ]
    found = [spec for spec in found if streamed_route(spec)]
    return found + probe_script("probe51").drawn_specs(SEED, DRAWN, lambda spec: streamed_route(spec) is not None, WIDTHS, "held72")


def ptxas_blocks(registers: int, threads: int) -> int:
    """The most blocks an SM holds of `threads` threads that each take `registers` (ptxas's count)."""
    allotted = -(-registers // REGISTER_ALLOCATION_UNIT) * REGISTER_ALLOCATION_UNIT
    return min(MAX_BLOCKS_PER_SM, SM_THREADS // threads, SM_REGISTERS // (allotted * threads))


def bounded(base: dict, schedule, blocks: int) -> dict | None:
    """`base` streamed on its threads under `blocks` blocks an SM, where the planner takes that hint with the
    row laid out as before; else None."""
    hints = dict(base.get("schedule", {}), variant="stream", threads=schedule.threads, blocks_per_sm=blocks)
    spec = dict(base, name=f"{base['name']}_new", schedule=hints)
    found = streamed_route(spec)
    if found is None:
        return None
    _, new = found
    same_row = (new.threads, new.elems_per_thread, new.vector_bytes, new.padded_hidden, new.prefetch) == (
        schedule.threads,
        schedule.elems_per_thread,
        schedule.vector_bytes,
        schedule.padded_hidden,
        schedule.prefetch,
    )
    return spec if same_row and new.blocks_per_sm == blocks else None


def main(out: Path, chosen: list[dict] | None = None) -> None:
    """Builds the pairs of `chosen` (default: bases()) into `out`."""
    old, new = out / "specs_old", out / "specs_new"
    old.mkdir(parents=True)
    new.mkdir()
    chosen = bases() if chosen is None else chosen
    for base in chosen:
        (old / f"{base['name']}_old.toml").write_text(dump(dict(base, name=f"{base['name']}_old")))
    timed = out / "time" / "kernels"
    build(ROOT, old.resolve(), timed.resolve())
    records = []
    for base in chosen:
        index, schedule = streamed_route(base)
        package = timed / f"{base['name']}_old"
        resources = compiled_programs_of_file(package / "kernel.py")[index][1]
        most = ptxas_blocks(resources.registers, schedule.threads)
        spec = next((s for b in range(most, schedule.blocks_per_sm, -1) if (s := bounded(base, schedule, b))), None)
        records.append(
            {
                "spec": base["name"],
                "threads": schedule.threads,
                "values": schedule.elems_per_thread,
                "registers": resources.registers,
                "stack_bytes": resources.stack_bytes,
                "planner_blocks": schedule.blocks_per_sm,
                "planner_ring": schedule.ring_slots,
                "ptxas_blocks": most,
                "timed_blocks": spec["schedule"]["blocks_per_sm"] if spec else None,
            }
        )
        if spec is None:
            shutil.rmtree(package)
        else:
            (new / f"{spec['name']}.toml").write_text(dump(spec))
    (out / "bounds.json").write_text(json.dumps(records, indent=1))
    probe_script("probe68").build_new(new, out)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
