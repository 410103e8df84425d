#!/usr/bin/env bash
# probe50's first device call: the timing probe49 could not finish (narrow rows on a warp each, _old,
# against rows sharing warps, _new/_r4/_r8), the slow held-out rows of probe47 under schedule hints
# (variants.py), then a fresh held-out draw (seed 5001) at its sweep counts, untuned. Logs and JSON to $OUT.
set -u
out=${OUT:-/tmp/probe50}
mkdir -p "$out"
start=$SECONDS
k=perf/probe50/kernels
step() { # name rounds limit
    timeout "$3" python3 perf/proto/probe_time.py "$k/$1/kernels" "$out/$1.json" "$2" > "$out/$1.log" 2>&1
    echo "$1 exit $? at $((SECONDS - start)) s"
}
step narrow 2 150
step variants 2 250
step heldout 1 $((${BUDGET_S:-560} - (SECONDS - start)))
grep -hE "x copy|DIFFER|not timed" "$out"/*.log | sort -k1,1 | head -200
