"""Small runs for compute-sanitizer: every generated kernel (unless --shared-only), then every stream case
of tests/cases.py, every route of a case that stages column-major scales in shared memory or sums a
per-head statistic in slices that meet there, every case still pending a GPU run, and (unless
--shared-only) every route of a kernel the planner routes by token count. --pending-only: the cases
pending a GPU run alone, every route of theirs. Usage: compute-sanitizer --tool memcheck|racecheck
python3 scripts/gpu_memcheck.py [--shared-only | --pending-only]

Generated kernels run at 8 and 3 tokens (the seed's small M, and an odd count) against their references.
Stream cases run at twice their persistent grid plus 3 tokens, so every block's ring wraps around and
the blocks differ in how many rows they take: the paths where a slot is refilled while it may still be
read, which racecheck watches. A route staging its scales (quant_fp8.staged_scales: one thread stores
what another wrote) runs at a count whose last block holds part of its rows. Prints one line per
kernel; the sanitizer reports any bad access."""

import importlib
import logging
import sys
import tempfile
from pathlib import Path

from fusegen import checking
from fusegen.ops.norm import sums_head_slices
from fusegen.ops.quant_fp8 import stages_scales
from fusegen.plan import plan
from fusegen.runtime import sm_count
from fusegen.spec import KernelSpec

root = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "tests"))
from cases import CASES, PENDING_GPU_CASES, spec_for  # noqa: E402

logging.getLogger("tilelang").setLevel(logging.WARNING)
pending_only = "--pending-only" in sys.argv
if "--shared-only" not in sys.argv and not pending_only:
    for kernel_dir in sorted((root / "generated").glob("*/kernel.py")):
        name = kernel_dir.parent.name
        for tokens in (8, 3):
            checking.run_and_compare(importlib.import_module(f"generated.{name}"), tokens)
        print(f"sanitized {name}: ran at 8 and 3 tokens, matched the reference", flush=True)
scratch = Path(tempfile.mkdtemp(prefix="fusegen-sanitize-"))
# Pending cases are paths no GPU has run yet: both sanitizers see them whatever their variant.
for name in sorted(PENDING_GPU_CASES):
    module = checking.import_plan(plan(KernelSpec.model_validate(spec_for(name)), name), scratch / name)
    for tokens in (8, 3):
        checking.run_and_compare(module, tokens)
    print(f"sanitized {name}: ran at 8 and 3 tokens, matched the reference", flush=True)
for name in sorted(PENDING_GPU_CASES if pending_only else {**CASES, **PENDING_GPU_CASES}):
    spec = KernelSpec.model_validate(spec_for(name))
    planned = plan(spec, name)
    module = None
    for route in planned.routes:
        schedule = route.schedule
        if schedule.variant == "stream":
            grid = schedule.blocks_per_sm * sm_count()
            tokens = spec.tokens or max(2 * grid + 3, route.first_tokens)
            what = f"streamed {tokens} tokens over {min(tokens, grid)} blocks"
        elif any(stages_scales(stage) for stage in route.stages):
            tokens = spec.tokens or (route.last_tokens or route.first_tokens + 2)
            what = f"stored its staged scales at {tokens} tokens"
        elif any(sums_head_slices(stage) for stage in route.stages):
            tokens = spec.tokens or (route.last_tokens or route.first_tokens + 2)
            what = f"added its heads' slice sums through shared memory at {tokens} tokens"
        elif len(planned.routes) > 1 and "--shared-only" not in sys.argv:
            # The routes of a kernel the planner routes by count (rows split over blocks for few tokens, one
            # row per block below a stream's counts): each at its last count (the open last one at its first).
            tokens = spec.tokens or route.last_tokens or route.first_tokens
            what = f"ran its route for {route.label()} tokens at {tokens}"
        else:
            continue
        module = module or checking.import_plan(planned, scratch / name)
        checking.run_and_compare(module, tokens)
        print(f"sanitized {name}: {what}, matched the reference", flush=True)
sys.exit(0)
