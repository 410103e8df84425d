#!/usr/bin/env bash
# One device call for the real-model chains (issue 14): the GPU tests of the model library (fusegen's
# reference and the float64 oracle at 1, 37, 4096 and 16384 tokens), the checks against the models' own
# Hugging Face code, the pending GPU cases (per-head and column-range paths) with both sanitizers, and a
# bench of the short-row schedule variants in perf/variants14/. Run from the repo root with tilelang
# importable; logs and bench results under $OUT, packed into $OUT/results.tar.gz after every step.
set -u
out=${OUT:-/tmp/fusegen-gpu}
work=$(mktemp -d)
mkdir -p "$out"
pack() { tar -czf "$out/results.tar.gz" -C "$work" .; }
pending=$(python3 -c "import sys; sys.path.insert(0, 'tests'); from cases import PENDING_GPU_CASES as p; print(' or '.join(p) or 'none')")
python3 -m pytest -m gpu tests/test_models.py tests/test_hf_models.py tests/test_gpu_matrix.py -k "models or hf or $pending" \
    -q -p no:cacheprovider -n 8 -rf > "$work/pytest.log" 2>&1
echo "pytest exit $?"; tail -25 "$work/pytest.log"
pack
compute-sanitizer --tool memcheck --error-exitcode 9 python3 scripts/gpu_memcheck.py --stream-only > "$work/memcheck.log" 2>&1
echo "memcheck exit $?"; grep -E "ERROR SUMMARY" "$work/memcheck.log" | tail -3
compute-sanitizer --tool racecheck --error-exitcode 9 python3 scripts/gpu_memcheck.py --stream-only > "$work/racecheck.log" 2>&1
echo "racecheck exit $?"; grep -E "RACECHECK SUMMARY|ERROR SUMMARY" "$work/racecheck.log" | tail -3
pack
python3 -m fusegen bench perf/variants14 specs/models/deepseek-v3-mla-kv-a.toml specs/models/qwen3-8b-k.toml \
    --tokens 16384 --baselines --out-dir "$work/variants14" > "$work/bench-variants14.log" 2>&1
echo "bench variants exit $?"; grep -E "^\| " "$work/variants14/bench.md" | cut -c1-150 | head -30
pack
