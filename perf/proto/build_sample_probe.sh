#!/usr/bin/env bash
# Builds a probe's sample into perf/PROBE/kernels/ (git-ignored), untuned, once per schedule variant, for
# one device call that carries them: `CHECK=PATTERN bash perf/proto/call_probe.sh perf/PROBE/kernels PROBE 3`.
#     bash perf/proto/build_sample_probe.sh PROBE SUFFIX=SCHEDULE ...
# perf/PROBE/sample.txt lists specs, one per line: CHAIN DTYPE HIDDEN (CHAIN one of CHAINS below). Each
# spec is built once per SUFFIX=SCHEDULE argument, named pNN_CHAIN_DTYPE_HIDDEN_SUFFIX (NN: the probe's
# number), with SCHEDULE (TOML lines of its [schedule] table, `;` between lines; empty: the planner's own)
# — e.g. `frag='variant = "fragment"' ws=` builds each spec as a fragment program and as variant auto.
# A spec that a SCHEDULE makes unplannable is left out, named. Run from the repo root on a machine with tilelang.
set -eu
source perf/proto/probe_build.sh
probe=$1
shift
probe_setup "$probe"
"$python" - "$work" "perf/$probe/sample.txt" "${probe//[!0-9]/}" "$@" <<'PY'
import sys
from pathlib import Path

work, sample, number, variants = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4:]
RMS, LN, ADD = '[[op]]\nkind = "rmsnorm"\n', '[[op]]\nkind = "layernorm"\n', '[[op]]\nkind = "add_residual"\n'
HEAD_RMS = '[[op]]\nkind = "rmsnorm"\nover = "head"\n'
def rope(dim=64, cache=False):
    return f'[[op]]\nkind = "rope"\nrope_dim = {dim}\n' + ('source = "cache"\nmax_position = 32768\n' if cache else "")
def quant(group="token"):
    return '[[op]]\nkind = "quant_fp8"\ngroup_size = ' + (f'"{group}"' if group == "token" else str(group)) + "\n"
NO_Y = '[outputs]\ny = false\n'
CHAINS = {
    "rms": (RMS,), "ln": (LN,), "rms_q": (RMS, quant(), NO_Y), "rms_q128": (RMS, quant(128), NO_Y),
    "ln_q": (LN, quant(), NO_Y), "ln_q128": (LN, quant(128), NO_Y),
    "rms_rope": (RMS, rope()), "ln_rope": (LN, rope()), "ln_rope_q128": (LN, rope(), quant(128), NO_Y),
    "rms_cache": (RMS, rope(cache=True)), "add_rms": (ADD, RMS), "add_rms_q": (ADD, RMS, quant(), NO_Y),
    "rms_rope_q": (RMS, rope(), quant(), NO_Y), "qk": (HEAD_RMS, rope(128, cache=True)),
}
(work / "specs").mkdir()
for line in sample.read_text().splitlines():
    if not line.strip():
        continue
    chain, dtype, hidden = line.split()
    body = "\n".join(CHAINS[chain])
    head = "head_dim = 128\n" if chain == "qk" else ""
    for variant in variants:
        suffix, _, schedule = variant.partition("=")
        table = "\n[schedule]\n" + schedule.replace(";", "\n") + "\n" if schedule else ""
        name = f"p{number}_{chain}_{dtype.replace('float', 'f')}_{hidden}_{suffix}"
        text = f'name = "{name}"\ndtype = "{dtype}"\nhidden = {hidden}\n{head}\n{body}{table}'
        (work / "specs" / f"{name}.toml").write_text(text)
PY
# A schedule some widths cannot take (threads = 128 on a row past 64 values a thread) is left out there.
plan_or_drop specs
build_with "$repo" specs
probe_collect
