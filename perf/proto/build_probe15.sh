#!/usr/bin/env bash
# Builds session 15's probe kernels (perf/probe15/README.md) into perf/probe15/kernels/, untuned, for one
# device call that carries them (git-ignored): `VERIFY=1 bash perf/proto/call_probe.sh perf/probe15/kernels probe15`.
#   - the pinned side inputs: the sweep's float32 kernels the rule now pins, NAME_old from the tree before it
#     (BEFORE, default 154ce62) and NAME_new from the working tree;
#   - the thread bound: the 7 sweep kernels that pad their row, NAME_tb_old from the working tree with
#     emit.THREAD_BOUND (and its CUDA check) left out, NAME_tb_new from the working tree.
# Run from the repo root on a machine with tilelang (this one; the device has none).
set -eu
source perf/proto/probe_build.sh
probe_setup probe15
before=${BEFORE:-154ce62}

pinned=(sweep_add_rms_f32_1024 sweep_add_rms_f32_3072 sweep_add_rms_f32_6144 sweep_ln_quant_f32_2880
    sweep_ln_quant_f32_5120 sweep_ln_quant_f32_768 sweep_ln_rope_quant_f32_1536 sweep_ln_rope_quant_f32_3584
    sweep_ln_rope_quant_f32_7168 sweep_rms_rope_f32_2560 sweep_rms_rope_f32_512 sweep_rms_rope_f32_8192)
padded=(issue_ln_e5m2_token_bf16_2880 sweep_cols_norm_rope_bf16_2048 sweep_cols_norm_rope_bf16_3840
    sweep_cols_norm_rope_bf16_7168 sweep_ln_quant_f32_2880 sweep_rms_quant_bf16_2880 sweep_rms_rope_quant_f16_2880)

git worktree add --detach "$work/before" "$before" > /dev/null
mkdir -p "$work/unbound-tree" && cp -r fusegen "$work/unbound-tree/"
"$python" - "$work/unbound-tree/fusegen" <<'EOF'
import sys
from pathlib import Path
root = Path(sys.argv[1])
emit = root / "emit.py"
text = emit.read_text()
assert "*THREAD_BOUND, " in text
emit.write_text(text.replace("*THREAD_BOUND, ", "", 1))
checks = root / "cuda_checks.py"
text = checks.read_text()
assert "thread_bound(source, s.threads), " in text
checks.write_text(text.replace("thread_bound(source, s.threads), ", "", 1))
EOF

# specs SUFFIX NAME...: copies of the sweep specs, renamed NAME_SUFFIX, in $work/specs-SUFFIX
specs() {
    local suffix=$1
    shift
    for name in "$@"; do renamed_spec "$name" "$suffix" "specs-$suffix" > /dev/null; done
}
specs old "${pinned[@]}" && build_with "$work/before" specs-old
specs new "${pinned[@]}" && build_with "$repo" specs-new
specs tb_old "${padded[@]}" && build_with "$work/unbound-tree" specs-tb_old
specs tb_new "${padded[@]}" && build_with "$repo" specs-tb_new

probe_collect  # want 38
grep -L "__builtin_assume" "$out"/*_tb_old/kernel.cu | wc -l | xargs echo "kernels without the thread bound (want 7):"
grep -l "annotate_restrict_buffers" "$out"/*_new/kernel.py | wc -l | xargs echo "pinned _new kernels (13 at cd0cf01; 8 since 44737fc pins only from 128 threads):"
