#!/usr/bin/env bash
# Session 12's last device call: rows that only a padded power-of-two thread count covers go to a count that
# covers them whole (schedule._row_schedule's key). The four kernels the rule changes (perf/thread-cover:
# three sweep specs at 3840 and Gemma 3's add → RMSNorm) checked against their references, then timed beside
# copies pinned to the previous 128 threads, at 8, 256 and the sweep count, torch.compile up to 256 tokens.
default_out=/tmp/fusegen-s12d
# shellcheck source=perf/proto/device_prologue.sh
source perf/proto/device_prologue.sh
export FUSEGEN_CACHE_DIR="$out/cache"
python3 - <<'PY' 2>&1 | grep -v -E "Warning|TileLang" | tee "$out/checks.log"
from pathlib import Path
from fusegen import checking
from fusegen.build import collect_spec_files, load_and_plan
for index, p in enumerate(load_and_plan(collect_spec_files([Path("perf/thread-cover")]))):
    if p.name.endswith("_t128"):
        continue
    module = checking.import_plan(p, Path(f"/tmp/cover/{index}"))
    for tokens in (1, 37, 4096, 16384):
        checking.run_and_compare(module, tokens)
    print(f"{p.name}: matches the reference at 1, 37, 4096, 16384 tokens")
PY
pack
timeout 150 python3 -m fusegen bench perf/thread-cover --tokens 8 256 --sweep-tokens --baselines --no-host-cost \
    --tuning "$out/no-tuning.json" --out-dir "$out/bench" > "$out/bench.log" 2>&1
echo "bench exit $? at $((SECONDS - start)) s"
grep -E "^\| " "$out/bench/bench.md" | head -40
pack
mkdir -p "$out/new"
cp perf/thread-cover/sweep_*_3840.toml perf/thread-cover/gemma-3-12b.toml "$out/new/"
timeout $((330 - (SECONDS - start))) python3 -m fusegen bench "$out/new" --tokens 8 256 --baselines compile --no-host-cost \
    --tuning "$out/no-tuning.json" --out-dir "$out/bench-compile" > "$out/bench-compile.log" 2>&1
echo "bench compile exit $? at $((SECONDS - start)) s"
grep -E "^\| " "$out/bench-compile/bench.md" | head -20
pack
