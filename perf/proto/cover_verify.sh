#!/usr/bin/env bash
# The plans the padding-before-powers-of-two rule changed, under the GPU suite and memcheck (session 12):
# the Gemma case at every token count of the GPU matrix, and the four perf/thread-cover kernels under
# compute-sanitizer memcheck at 37 and 4099 tokens.
default_out=/tmp/fusegen-s12e
# shellcheck source=perf/proto/device_prologue.sh
source perf/proto/device_prologue.sh
export FUSEGEN_CACHE_DIR="$out/cache"
python3 -m pytest -m gpu tests/test_gpu_matrix.py -k rms_gemma_offset_3840 -q -p no:cacheprovider 2>&1 | tail -3 | tee "$out/pytest.log"
cat > "$out/cover_memcheck.py" <<'PY'
from pathlib import Path
from fusegen import checking
from fusegen.build import collect_spec_files, load_and_plan
for index, p in enumerate(load_and_plan(collect_spec_files([Path("perf/thread-cover")]))):
    if p.name.endswith("_t128"):
        continue
    module = checking.import_plan(p, Path(f"/tmp/cover-mc/{index}"))
    for tokens in (37, 4099):
        checking.run_and_compare(module, tokens)
    print(f"sanitized {p.name}: 37 and 4099 tokens matched the reference", flush=True)
PY
compute-sanitizer --tool memcheck --error-exitcode 9 python3 "$out/cover_memcheck.py" > "$out/memcheck.log" 2>&1
echo "memcheck exit $?" | tee -a "$out/memcheck.log"
grep -E "sanitized|ERROR SUMMARY" "$out/memcheck.log"
pack
