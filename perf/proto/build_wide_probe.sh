#!/usr/bin/env bash
# Builds a wide-stream probe of session 17 (perf/PROBE/README.md) into perf/PROBE/kernels/, untuned, for one
# device call that carries them (git-ignored): `CHECK=_ws bash perf/proto/call_probe.sh perf/PROBE/kernels PROBE 3`.
#     bash perf/proto/build_wide_probe.sh PROBE
# probe17: the sample the rule was refitted on (built at f730b48, the rule before the refit); probe18: specs
# the refitted rule streams, held out from its fit.
# perf/PROBE/sample.txt lists specs (chain dtype hidden) whose planner schedule the wide-stream rule
# (schedule.wide_stream) turns from fragment to stream:
#   - NAME_frag: the spec with variant = "fragment" (the schedule auto took before the rule);
#   - NAME_ws: the spec as it is, variant auto: the rule's stream.
# Run from the repo root on a machine with tilelang.
set -eu
source perf/proto/probe_build.sh
probe_setup "$1"
"$python" - "$work" "perf/$1/sample.txt" <<'PY'
import sys
from pathlib import Path

work = Path(sys.argv[1])
RMS, LN, ADD = '[[op]]\nkind = "rmsnorm"\n', '[[op]]\nkind = "layernorm"\n', '[[op]]\nkind = "add_residual"\n'
HEAD_RMS = '[[op]]\nkind = "rmsnorm"\nover = "head"\n'
def rope(dim=64, cache=False):
    return f'[[op]]\nkind = "rope"\nrope_dim = {dim}\n' + ('source = "cache"\nmax_position = 32768\n' if cache else "")
def quant(group="token"):
    return '[[op]]\nkind = "quant_fp8"\ngroup_size = ' + (f'"{group}"' if group == "token" else str(group)) + "\n"
NO_Y = '[outputs]\ny = false\n'
CHAINS = {
    "ln": (LN,), "ln_q": (LN, quant(), NO_Y), "ln_q128": (LN, quant(128), NO_Y),
    "ln_rope": (LN, rope()), "ln_rope_q128": (LN, rope(), quant(128), NO_Y),
    "rms_cache": (RMS, rope(cache=True)), "add_rms_q": (ADD, RMS, quant(), NO_Y),
    "rms_rope_q": (RMS, rope(), quant(), NO_Y), "qk": (HEAD_RMS, rope(128, cache=True)),
}
SAMPLE = [(chain, dtype, int(hidden)) for chain, dtype, hidden in (line.split() for line in Path(sys.argv[2]).read_text().splitlines() if line.strip())]
for chain, dtype, hidden in SAMPLE:
    ops = CHAINS[chain]
    body = "\n".join(ops)
    head = "head_dim = 128\n" if chain == "qk" else ""
    for suffix, directory, schedule in (("frag", "specs-frag", '\n[schedule]\nvariant = "fragment"\n'), ("ws", "specs", "")):
        name = f"p17_{chain}_{dtype.replace('float', 'f').replace('bf', 'bf')}_{hidden}_{suffix}"
        (work / directory).mkdir(exist_ok=True)
        text = f'name = "{name}"\ndtype = "{dtype}"\nhidden = {hidden}\n{head}\n{body}{schedule}'
        (work / directory / f"{name}.toml").write_text(text)
PY
build_with "$repo" specs-frag
build_with "$repo" specs
probe_collect
"$python" - "$out" <<'PY'
import json
import sys
from pathlib import Path

# Every _ws package must be the rule's stream, every _frag one a fragment program.
for plan_file in sorted(Path(sys.argv[1]).glob("*/plan.json")):
    variant = json.loads(plan_file.read_text())["routes"][-1]["schedule"]["variant"]
    want = "stream" if plan_file.parent.name.endswith("_ws") else "fragment"
    assert variant == want, (plan_file.parent.name, variant)
PY
