#!/usr/bin/env bash
# probe51's device call, and any probe's that builds DIR/check and DIR/time (probes 52, 91, 94, 96, 97, 100, with
# their kernels as the argument): the builds in DIR/check against their references (scripts/gpu_hunt.py), then
# every build in DIR/time timed at its sweep count, untuned, ROUNDS rounds — or at each count of TOKENS ("1 8 64":
# time_<count>.json and .log). Logs and JSON to $OUT, written as they come (a call cut short keeps them).
set -u
out=${OUT:-/tmp/probe51}
mkdir -p "$out"
start=$SECONDS
k=${1:-perf/probe51/kernels}
timeout "${CHECK_S:-170}" python3 scripts/gpu_hunt.py check $k/check --jobs 15 > "$out/check.log" 2>&1
echo "check exit $? at $((SECONDS - start)) s"; tail -1 "$out/check.log"; grep -A4 FAIL "$out/check.log" | cut -c1-300 | head -30
time_at() { # time_at SUFFIX [COUNT]: every build at COUNT tokens (its sweep count without one) in the time left
    PROBE_TOKENS=${2:-} timeout $((${BUDGET_S:-560} - (SECONDS - start))) python3 perf/proto/probe_time.py $k/time/kernels \
        "$out/time$1.json" "${ROUNDS:-2}" > "$out/time$1.log" 2>&1
    echo "time$1 exit $? at $((SECONDS - start)) s"
    grep -hE "x copy|DIFFER|not timed" "$out/time$1.log" | sort | head -120
}
if [[ -z ${TOKENS:-} ]]; then
    time_at ""
else
    for tokens in $TOKENS; do time_at "_$tokens" "$tokens"; done
fi
