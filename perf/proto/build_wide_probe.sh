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
bash perf/proto/build_sample_probe.sh "$1" 'frag=variant = "fragment"' ws=
"${PYTHON:-.venv/bin/python}" - "perf/$1/kernels" <<'PY'
import json
import sys
from pathlib import Path

# Every _ws package must be the rule's stream, every _frag one a fragment program.
for plan_file in sorted(Path(sys.argv[1]).glob("*/plan.json")):
    variant = json.loads(plan_file.read_text())["routes"][-1]["schedule"]["variant"]
    want = "stream" if plan_file.parent.name.endswith("_ws") else "fragment"
    assert variant == want, (plan_file.parent.name, variant)
PY
