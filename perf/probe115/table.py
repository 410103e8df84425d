"""The 61 timed pairs of perf/probe114 and perf/probe115 in one table, for fitting a vector rule that weighs what a
narrower vector adds (a RoPE pair's exchange, a group's or head's lanes) against the whole vectors of padding it
removes: per pair the chain, the old and new layouts (threads × vector bytes, padding factor, vectors a thread, those
no real column reaches), each side's RoPE pairing and quantisation-group lanes, the register estimate, and new / old
speed at the sweep count.

    python perf/probe115/table.py > perf/probe115/pairs.md      # needs both probes' kernels built (see READMEs)"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBES = {
    "probe114": ("perf/probe114/kernels/time/kernels", ("perf/probe114/results/time-0.json", "perf/probe114/results/time-1.json")),
    "probe115": ("perf/probe115/kernels/time/kernels", ("perf/probe115/results/pairs.txt",)),
}


def speedups(results: tuple[str, ...]) -> dict[str, float]:
    """Old time / new time per pair, from probe_time.py's rows or pairs.py's lines."""
    out = {}
    for name in results:
        path = ROOT / name
        if path.suffix == ".json":
            rows = {r["kernel"]: r["median_us"] for r in json.loads(path.read_text())["rows"]}
            out |= {k[:-4]: rows[k[:-4] + "_old"] / us for k, us in rows.items() if k.endswith("_new") and k[:-4] + "_old" in rows}
        else:
            out |= {m[1]: float(m[2]) for m in re.finditer(r"^(\S+)\s+\d+\s+[\d.]+ →\s+[\d.]+ µs\s+([\d.]+) ×", path.read_text(), re.M)}
    return out


def layout(package: Path) -> str:
    plan = json.loads((package / "plan.json").read_text())
    s = plan["routes"][-1]["schedule"]
    hints = plan["spec"].get("schedule") or {}
    columns = plan["hidden"] // (hints["row_split"] if isinstance(hints.get("row_split"), int) else 1)
    row_threads = s["threads"] if s["block_m"] == 1 or s["rows_share_threads"] else s["threads"] // s["block_m"]
    tile = row_threads * s["vector_elems"]
    vectors = s["padded_hidden"] // tile
    empty = vectors - math.ceil(columns / tile)
    text = (package / "kernel.py").read_text()
    pairing = re.search(r"pairing: (in registers|shared-memory|warp shuffle, partners (\d+) lanes)", text)
    group = re.search(r"group_size = (\d+)", (package.parent.parent.parent / "specs_new" / f"{package.name[:-4]}_new.toml").read_text())
    lanes = f"g{math.ceil(int(group[1]) / s['vector_elems'])}l" if group else "-"
    pair = ({"in registers": "reg", "shared-memory": "smem"}.get(pairing[1]) or f"shfl{pairing[2]}") if pairing else "-"
    return (
        f"{s['threads']}×{s['vector_bytes']}B{'/' + str(s['block_m']) if s['block_m'] > 1 else ''} "
        f"pad {s['padded_hidden'] / columns:.2f} v{vectors} e{empty} {pair} {lanes} r{s['register_estimate']}"
    )


def main() -> None:
    print("Layouts: threads × vector bytes (/rows a block), padding ÷ columns, vectors a thread (v), of them no real column")
    print("(e), RoPE pairing (reg: in a thread; smem: shared-memory round trip; shflN: shuffle N lanes apart), lanes a")
    print("quantisation group spans (gNl), register estimate (r). new / old: speed of the new program over the old one.")
    print()
    print("| pair | dtype | chain | old | new | new / old |")
    print("|---|---|---|---|---|---:|")
    for probe, (kernels, results) in PROBES.items():
        for name, speedup in sorted(speedups(results).items(), key=lambda item: item[1]):
            package = ROOT / kernels / f"{name}_old"
            plan = json.loads((package / "plan.json").read_text())
            chain = " → ".join(op["kind"] for op in plan["spec"]["op"])
            new = layout(ROOT / kernels / f"{name}_new")
            print(f"| {probe} {name} | {plan['dtype']} {plan['hidden']} | {chain} | {layout(package)} | {new} | {speedup:.3f} |")


if __name__ == "__main__":
    main()
