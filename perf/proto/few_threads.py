"""Writes perf/few-threads: for each sweep spec whose planner route at 8 tokens keeps whole rows (a chain
with a row-wide reduction cannot split them), a copy pinned to twice that route's threads —
the data for a few-token rule (session 10: most few-token tuning buckets the quick search missed were won by
the planner's schedule on twice its threads; values per thread, not the grid, bound RoPE → FP8 7168 at 1–8
tokens). `fusegen bench` times them beside the planner's own specs against torch.compile at few tokens."""

import sys
from pathlib import Path

from fusegen.build import load_and_plan
from fusegen.errors import SpecError

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "perf" / "few-threads"


def main() -> None:
    OUT.mkdir(exist_ok=True)
    files = sorted((ROOT / "perf" / "sweep").glob("*.toml"))
    for file, plan in zip(files, load_and_plan(files)):
        schedule = plan.route_for(8).schedule
        if schedule.row_split != 1 or schedule.variant != "fragment":
            continue
        text = file.read_text()
        (OUT / file.name).write_text(text)
        for factor in (2,):
            threads = schedule.threads * factor
            if threads > 1024:
                continue
            name = f"{plan.name}_t{threads}"
            body = text.replace(f'name = "{plan.name}"', f'name = "{name}"', 1).rstrip("\n")
            body += f"\n\n[schedule]\nthreads = {threads}\n"
            path = OUT / f"{name}.toml"
            path.write_text(body)
            try:
                load_and_plan([path])
            except SpecError:  # a thread count the row does not tile: no such variant
                path.unlink()
    print(len(list(OUT.glob("*.toml"))), "specs in", OUT, file=sys.stderr)


if __name__ == "__main__":
    main()
