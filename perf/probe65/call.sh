#!/usr/bin/env bash
# probe65's device call, one spec a call (a full tune of one spec takes ~2-4 minutes; three in one call did not
# finish in 185 s): `SPEC=perf/probe65/specs/p65_ln_rope_quant_f32_7168.toml bash perf/probe65/call.sh`.
# tune.json and tune.md (every candidate's times) and the log to $OUT.
set -u
out=${OUT:-/tmp/probe65}
mkdir -p "$out"
echo '{}' > "$out/tuning.json"
timeout "${BUDGET_S:-400}" python3 -m fusegen tune "${SPEC:?a spec file}" --tuning "$out/tuning.json" --out-dir "$out/tune" > "$out/tune.log" 2>&1
echo "tune exit $?"
head -40 "$out/tune/tune.md" 2>/dev/null
