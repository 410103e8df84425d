#!/usr/bin/env bash
# probe81's device call: the new builds against their references, probe80's four checks a broken process
# pool left unrun (each alone, so a crash names its package), the GPU matrix's short-row cases on this tree,
# then old against new at the sweep counts.
set -u
out=${OUT:-/tmp/probe81}
mkdir -p "$out"
start=$SECONDS
k=perf/probe81/kernels
timeout 150 python3 scripts/gpu_hunt.py check $k/check --jobs 14 > "$out/check.log" 2>&1
echo "check exit $? at $((SECONDS - start)) s"; grep -E "FAIL|checked" "$out/check.log" | head
for d in $k/recheck/*; do
  timeout 60 python3 scripts/gpu_hunt.py check $d --jobs 1 > "$out/recheck-$(basename $d).log" 2>&1
  echo "recheck $(basename $d) exit $?"; grep -vE "TileLang|warn" "$out/recheck-$(basename $d).log" | tail -n 4 | cut -c1-400
done
timeout 150 python3 -m pytest -m gpu tests/test_gpu_matrix.py -k "short_rows" -q -p no:cacheprovider -n 8 > "$out/pytest.log" 2>&1
echo "pytest exit $? at $((SECONDS - start)) s"; tail -n 3 "$out/pytest.log"
timeout $((520 - (SECONDS - start))) python3 perf/proto/probe_time.py $k/time/kernels "$out/time.json" 2 > "$out/time.log" 2>&1
echo "time exit $? at $((SECONDS - start)) s"
grep -hE "x copy|DIFFER|not timed" "$out/time.log" | sort | head -60
