#!/usr/bin/env bash
# Builds session 17's probe (perf/probe17/README.md) into perf/probe17/kernels/, untuned, for one device
# call that carries them (git-ignored): `CHECK=_ws bash perf/proto/call_probe.sh perf/probe17/kernels probe17 3`.
# A sample of the specs whose planner schedule the wide-stream rule (schedule.wide_stream) turns from
# fragment to stream, over chains, dtypes and widths it was not fitted to:
#   - NAME_frag: the spec with variant = "fragment" (the schedule auto took before the rule);
#   - NAME_ws: the spec as it is, variant auto: the rule's stream.
# Run from the repo root on a machine with tilelang.
set -eu
source perf/proto/probe_build.sh
probe_setup probe17
"$python" - "$work" <<'PY'
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
SAMPLE = [
    ("ln", "float16", 5120), ("ln", "bfloat16", 7168), ("ln", "bfloat16", 8192), ("ln", "float16", 12288),
    ("ln", "float32", 3072), ("ln", "float32", 6144),
    ("ln_q", "bfloat16", 6144), ("ln_q", "float32", 5120), ("ln_q", "float16", 10240),
    ("ln_q128", "bfloat16", 7168), ("ln_q128", "float32", 3072),
    ("ln_rope", "bfloat16", 7168), ("ln_rope", "float16", 12288),
    ("ln_rope_q128", "float32", 7168), ("ln_rope_q128", "bfloat16", 5120), ("ln_rope_q128", "float16", 8192),
    ("rms_cache", "bfloat16", 6144), ("rms_cache", "float16", 8192), ("rms_cache", "bfloat16", 12288),
    ("add_rms_q", "float16", 6144), ("add_rms_q", "bfloat16", 8192), ("add_rms_q", "bfloat16", 12288),
    ("add_rms_q", "float32", 7168),
    ("rms_rope_q", "float16", 7168), ("rms_rope_q", "bfloat16", 10240),
    ("qk", "float16", 7168), ("qk", "bfloat16", 8192),
]
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
probe_collect  # want 54
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
