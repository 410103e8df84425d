#!/usr/bin/env bash
# One device call for a probe: times a directory of built kernel packages interleaved at their sweep counts
# (proto/probe_time.py, which first compares each pair named NAME_old / NAME_new bit for bit), after the
# whole GPU verification of the tree when VERIFY=1 (scripts/gpu_verify.sh, at most 330 s), then checks the
# kernels whose names contain CHECK against their references (proto/probe_check.py) when CHECK is set.
#     [VERIFY=1] [CHECK=PATTERN] bash perf/proto/call_probe.sh KERNELS_DIR LABEL [ROUNDS]
# Run from the repo root with tilelang importable. Everything comes back in $OUT/results.tar.gz
# (LABEL.json, LABEL.log and the verification's logs).
set -u
kernels=$1
label=$2
rounds=${3:-3}
out=${OUT:-/tmp/probe}
work=$(mktemp -d)
start=$SECONDS
pack() { tar -czf "$out/results.tar.gz" -C "$work" .; }
if [[ ${VERIFY:-0} == 1 ]]; then
    OUT=$work timeout 330 bash scripts/gpu_verify.sh > "$work/verify.log" 2>&1
    echo "verify exit $? at $((SECONDS - start)) s"; tail -5 "$work/pytest.log"; grep -h "exit" "$work/memcheck.log" "$work/racecheck.log"
    pack
fi
timeout $((570 - (SECONDS - start))) python3 perf/proto/probe_time.py "$kernels" "$work/$label.json" "$rounds" > "$work/$label.log" 2>&1
echo "$label timing exit $? at $((SECONDS - start)) s"
pack
if [[ -n ${CHECK:-} ]]; then
    timeout $((580 - (SECONDS - start))) python3 perf/proto/probe_check.py "$kernels" "$CHECK" > "$work/$label-check.log" 2>&1
    echo "$label check exit $? at $((SECONDS - start)) s"; grep -c " ok$" "$work/$label-check.log"; grep FAIL "$work/$label-check.log"
    pack
fi
grep -E "x copy|identical|DIFFER|not timed" "$work/$label.log"
