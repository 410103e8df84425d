#!/usr/bin/env bash
# Builds perf/probe45/kernels: LayerNorm chains over the whole row at wide rows — perf/probe43's eleven and
# those of a fresh draw of the same generator (seed 45) — each four times: NAME_frag (the planner's own
# program), NAME_b3 (variant reread as hinted today: up to 512 threads, 1536 threads an SM, tiles held
# where at most four), NAME_t256s and NAME_t256h (reread on 256 threads under a bound of four blocks, the
# finishing pass a loop that reads each tile again / unrolled so the row's words stay held). The last two
# come from copies of fusegen/ with schedule.REREAD_THREADS_PER_SM and REREAD_HELD_TILES changed.
# Run from the repo root: bash perf/probe45/build.sh
set -eu
source perf/proto/probe_build.sh
probe_setup probe45
"$python" perf/probe43/census.py "$work/c43" --seed 43 --count 60 > /dev/null
"$python" perf/probe43/census.py "$work/c45" --seed 45 --count 60 > /dev/null
for bound_held in 1024-0 1024-64; do
    mkdir -p "$work/tree-$bound_held"
    cp -r fusegen "$work/tree-$bound_held/"
    sed -i -e "s/^REREAD_THREADS_PER_SM = 1536$/REREAD_THREADS_PER_SM = ${bound_held%-*}/" \
        -e "s/^REREAD_HELD_TILES = 4$/REREAD_HELD_TILES = ${bound_held#*-}/" "$work/tree-$bound_held/fusegen/schedule.py"
    grep -c "^REREAD_THREADS_PER_SM = ${bound_held%-*}$\|^REREAD_HELD_TILES = ${bound_held#*-}$" "$work/tree-$bound_held/fusegen/schedule.py" | grep -qx 2
done
"$python" - "$work" <<'PY'
import sys, tomllib
from pathlib import Path
sys.path.insert(0, ".")
from fusegen.errors import ChainError
from fusegen.plan import plan
from fusegen.spec import KernelSpec
work = Path(sys.argv[1])
HINTS = {"frag": None, "b3": {"variant": "reread"}, "t256s": {"variant": "reread", "threads": 256}, "t256h": {"variant": "reread", "threads": 256}}
kept = 0
for spec_file in sorted([*work.glob("c43/*.toml"), *work.glob("c45/*.toml")]):
    text = spec_file.read_text()
    spec = tomllib.loads(text)
    ops = spec["op"]
    if ops[0]["kind"] != "layernorm" or spec["hidden"] < 6144 or "columns" in ops[0] or ops[0].get("over", "row") != "row":
        continue
    name = spec["name"] if spec_file.parent.name == "c43" else spec["name"].replace("c", "d", 1)
    try:
        for hints in (h for h in HINTS.values() if h):
            plan(KernelSpec.model_validate({**spec, "schedule": hints}), "k.toml")
    except ChainError:
        continue
    if spec_file.parent.name == "c43" or name.startswith("d"):
        kept += 1
    for label, hints in HINTS.items():
        out = work / label
        out.mkdir(exist_ok=True)
        body = text.replace(f'name = "{spec["name"]}"', f'name = "{name}_{label}"')
        if hints:
            body += "\n[schedule]\n" + "".join(f'{k} = {v if isinstance(v, int) else chr(34) + v + chr(34)}\n' for k, v in hints.items())
        (out / f"{name}_{label}.toml").write_text(body)
print(kept, "LayerNorm specs")
PY
build_with "$repo" frag
build_with "$repo" b3
build_with "$work/tree-1024-0" t256s
build_with "$work/tree-1024-64" t256h
probe_collect
