#!/usr/bin/env bash
# Session 11's first device call: the C++ launch path (fusegen.native) on the H200 — is it built there, the
# drop-in checks and host µs per call (scripts/gpu_dropin.py), then the whole GPU verification
# (scripts/gpu_verify.sh: tests, memcheck of every planner route, racecheck of the stream cases).
default_out=/tmp/fusegen-native
# shellcheck source=perf/proto/device_prologue.sh
source perf/proto/device_prologue.sh
export FUSEGEN_CACHE_DIR="$out/cache"
python3 -c "
import time; t = time.perf_counter()
from fusegen import native
print('native available:', native.available(), native.unavailable(), f'{time.perf_counter() - t:.1f} s')
" 2>&1 | tee "$out/native.log"
timeout 200 python3 scripts/gpu_dropin.py "$out/dropin.json" > "$out/dropin.log" 2>&1
echo "dropin exit $? at $((SECONDS - start)) s"
grep -E "host|error" "$out/dropin.log" | head -20
rm -rf "$out/cache"
pack
OUT="$out/verify" bash scripts/gpu_verify.sh
echo "verify done at $((SECONDS - start)) s"
pack
