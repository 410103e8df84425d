#!/usr/bin/env bash
# Builds session 16's stream probe (perf/probe16/README.md) into perf/probe16/kernels/, untuned, for one
# device call that carries them (git-ignored): `CHECK=_strm bash perf/proto/call_probe.sh perf/probe16/kernels probe16 3`.
#   - NAME_frag: the sweep spec as the planner schedules it (the working tree);
#   - NAME_strm: the stream variant at 128 threads (256 where a row does not fit 128) with a 2-slot ring,
#     blocks per SM as the planner sizes them; NAME_strm3: the same at 3 blocks per SM, where that fits;
#   - NAME_b32, NAME_b32r3: the short rows (512, 768) streamed by 32 blocks of 32 threads an SM, the ring
#     as the planner sizes it and at 3 slots.
# The variants are built with a copy of the working tree whose stream ring may fill an SM's shared memory
# (227 KB) instead of the 48 KB the planner allows today (two fp32 rows of 6144 and up need more), and
# whose SM may hold 32 blocks (Hopper's limit) instead of the planner's 16.
# Run from the repo root on a machine with tilelang.
set -eu
source perf/proto/probe_build.sh
probe_setup probe16
mkdir -p "$work/tree" && cp -r fusegen "$work/tree/"
"$python" - "$work/tree/fusegen/schedule.py" <<'PY'
import sys
from pathlib import Path
path = Path(sys.argv[1])
text = path.read_text()
for old in ("    if ring > SHARED_BYTES_LIMIT:\n", "        if deeper_ring > SHARED_BYTES_LIMIT or"):
    assert old in text, old
    text = text.replace(old, old.replace("SHARED_BYTES_LIMIT", "SM_SHARED_BYTES"))
assert "MAX_BLOCKS_PER_SM = 16\n" in text
text = text.replace("MAX_BLOCKS_PER_SM = 16\n", "MAX_BLOCKS_PER_SM = 32\n")
path.write_text(text)
PY

wide=(issue_rms_rope_g128_bf16_5120 sweep_ln_quant_f32_5120 sweep_rms_rope_quant_f16_5120 sweep_rms_rope_quant_y_bf16_5120
    sweep_rms_cache_rope_bf16_6144 sweep_add_rms_f32_6144 sweep_ln_rope_quant_f32_7168 sweep_cols_norm_rope_bf16_7168
    sweep_qk_norm_rope_f16_7168 sweep_ln_bf16_8192 sweep_rms_f16_8192 sweep_rms_rope_f32_8192)
widest=(sweep_ln_quant_f32_12288 sweep_ln_rope_f16_12288 sweep_rms_rope_quant_f16_16384 sweep_add_rms_f32_16384)
short=(sweep_ln_bf16_512 sweep_rms_f16_512 sweep_rms_quant_bf16_768)
three=(sweep_ln_quant_f32_5120 sweep_ln_rope_quant_f32_7168 sweep_add_rms_f32_6144 sweep_rms_rope_f32_8192
    sweep_rms_cache_rope_bf16_6144 sweep_cols_norm_rope_bf16_7168 sweep_rms_f16_8192 sweep_ln_bf16_8192)

# variant NAME SUFFIX [SCHEDULE_LINES]: a copy of the sweep spec named NAME_SUFFIX, with a [schedule] table
# (the planner's own schedule into specs-frag, built with the working tree; the others into specs)
variant() {
    local file
    file=$(renamed_spec "$1" "$2" "specs$([[ -z ${3:-} ]] && echo -frag)")
    if [[ -n ${3:-} ]]; then printf '\n[schedule]\nvariant = "stream"\n%b' "$3" >> "$file"; fi
}
for name in "${wide[@]}" "${widest[@]}" "${short[@]}"; do variant "$name" frag; done
for name in "${wide[@]}"; do variant "$name" strm 'threads = 128\nring_slots = 2\n'; done
for name in "${widest[@]}"; do variant "$name" strm 'threads = 256\nring_slots = 2\n'; done
for name in "${three[@]}"; do variant "$name" strm3 'threads = 128\nring_slots = 2\nblocks_per_sm = 3\n'; done
for name in "${short[@]}"; do
    variant "$name" b32 'threads = 32\nblocks_per_sm = 32\n'
    variant "$name" b32r3 'threads = 32\nblocks_per_sm = 32\nring_slots = 3\n'
done

build_with "$repo" specs-frag
build_with "$work/tree" specs
probe_collect  # want 49
