#!/usr/bin/env bash
# probe114's device call (carry .device with perf/probe114/kernels packed by scripts/pack_built.sh, then
# `tar -xJf .device/built.tar.xz`): every NAME_new against its reference at every route's counts and edges
# (scripts/gpu_hunt.py check over the new builds alone), then the unhinted pairs (changed only below 1025 tokens,
# kernels/few) at each of FEW_TOKENS (default 8 256) and the hinted ones (kernels/time) at their sweep count, each
# in interleaved rounds. JOBS: the check's workers (default 15; fewer where an 80 GB card runs out of memory, as
# probe123's 24576-column rows did). PROBE=probe115, probe116 (sweep-count pairs only) or probe117 (few-token pairs
# only, FEW_TOKENS="8 128 256"): the same call over that probe's pairs. A device call returns at most eight files
# from $OUT (probe125's first call lost its pair tables to that), so $OUT gets check.log, each pairs table and
# raw.tar.gz (the timings' json and logs).
set -u
probe=${PROBE:-probe114}
out=${OUT:-/tmp/$probe}
raw=$(mktemp -d)
k=perf/$probe/kernels
mkdir -p "$out" /tmp/$probe-new/kernels
start=$SECONDS
few=$([[ -d $k/few ]] && echo "${FEW_TOKENS:-8 256}")
wide=$([[ -d $k/time ]] && echo yes)
cp -r ${wide:+$k/time/kernels/*_new} ${few:+$k/few/time/kernels/*_new} /tmp/$probe-new/kernels/
timeout "${CHECK_S:-150}" python3 scripts/gpu_hunt.py check /tmp/$probe-new --jobs "${JOBS:-15}" > "$out/check.log" 2>&1
echo "check exit $? at $((SECONDS - start)) s"; tail -1 "$out/check.log"; grep -A4 FAIL "$out/check.log" | cut -c1-300 | head -20
for tokens in $few; do
    PROBE_TOKENS=$tokens timeout "${FEW_S:-60}" python3 perf/proto/probe_time.py $k/few/time/kernels "$raw/few-$tokens.json" "${ROUNDS:-3}" \
        > "$raw/few-$tokens.log" 2>&1
    echo "few at $tokens exit $? at $((SECONDS - start)) s"
    python3 perf/probe106/pairs.py "$raw/few-$tokens.json" | tee "$out/few-$tokens-pairs.txt" | tail -1
done
if [[ -n $wide ]]; then
    timeout $((${BUDGET_S:-400} - (SECONDS - start))) python3 perf/proto/probe_time.py $k/time/kernels "$raw/time.json" "${ROUNDS:-3}" \
        > "$raw/time.log" 2>&1
    echo "time exit $? at $((SECONDS - start)) s"
    python3 perf/probe106/pairs.py "$raw/time.json" | tee "$out/pairs.txt" | tail -1
fi
tar -czf "$out/raw.tar.gz" -C "$raw" .
