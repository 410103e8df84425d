"""Launch bounds from ptxas's registers (schedule.ptxas_bound_trials, build.stage): where the planner's
fragment program keeps few warps an SM by ptxas's own count, `fusegen build` compiles it under more blocks
and keeps the most that ptxas met without a spill; where ptxas spilled a planner's program under its bound,
under fewer."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from test_injection import dump

import fusegen
from fusegen import build, checking, testing
from fusegen.compile import Resources
from fusegen.plan import CompiledBound, plan
from fusegen.schedule import PTXAS_SPILL_KEEP_TWO_BLOCKS_BYTES, PTXAS_SPILL_RELAX_BYTES, ptxas_bound_trials, registers_allotted, spill_kept
from fusegen.spec import KernelSpec
from fusegen.tuning import TunedRoute

# perf/probe74's held74_7401_31: ptxas gave the planner's program (256 threads, no bound) 115 registers, two
# blocks an SM; under three it gave 80 without a spill, under four it spilled (the probe's bounds.json).
LAYERNORM_ROPE_FP8 = {
    "name": "ln_rescale_rope_fp8_f16_8192",
    "dtype": "float16",
    "hidden": 8192,
    "op": [
        {"kind": "layernorm", "weight": False, "columns": [3128, 3656]},
        {"kind": "rescale", "factor": -1.5, "weight": True},
        {"kind": "rope", "rope_dim": 16, "span": "head"},
        {"kind": "quant_fp8", "group_size": 32},
    ],
    "outputs": {"mean": True, "y": True},
}


# perf/probe84's spill84_3901_051: the planner bounds its 576-thread program of many tokens at two blocks an
# SM (56 registers), where ptxas spilled 96 bytes a thread; under one block it gave 80 without a spill, and ran
# 0.66 → 0.74 × copy.
ROPE_FP8_SPILLED = {
    "name": "rope_fp8_f16_18432",
    "dtype": "float16",
    "hidden": 18432,
    "head_dim": 96,
    "op": [
        {"kind": "rope", "rope_dim": 32, "span": "tail"},
        {"kind": "quant_fp8", "group_size": 64, "fp8": "e5m2", "scale": "fp32"},
    ],
    "outputs": {"y": True},
}

# perf/probe123's spill123_12304_45: the planner bounds its 512-thread program at two blocks an SM, where ptxas
# spilled 40 bytes a thread at 64 registers; it writes only FP8 and its scales (the mean is one value a token),
# and ran 1.35 × faster kept at two blocks than lowered to one (H100).
FP8_ONLY_SPILLED = {
    "name": "ln_rescale_rope_fp8_bf16_24576",
    "dtype": "bfloat16",
    "hidden": 24576,
    "op": [
        {"kind": "layernorm", "bias": True},
        {"kind": "rescale", "factor": 2.0},
        {"kind": "rope", "rope_dim": 256, "span": "tail"},
        {"kind": "quant_fp8", "group_size": 128, "scale": "fp32", "amax_floor": 1.0},
    ],
    "outputs": {"mean": True, "y": False},
}


def planned(spec: dict, **hints):
    return plan(KernelSpec.model_validate({**spec, "schedule": hints}), "x.toml")


def test_trials_add_up_to_three_blocks_where_ptxas_keeps_few_warps():
    p = planned(LAYERNORM_ROPE_FP8)
    spec = KernelSpec.model_validate(LAYERNORM_ROPE_FP8)
    s = p.schedule
    assert (s.variant, s.threads, s.block_m) == ("fragment", 256, 1)
    writes_row = p.writes_row
    assert ptxas_bound_trials(spec, s, 115, writes_row=writes_row) == (3, 4, 5)  # 115 registers keep two blocks of eight warps
    assert ptxas_bound_trials(spec, s, 80, writes_row=writes_row) == ()  # three blocks: 24 warps, which fill the SM (perf/probe74–75)
    assert ptxas_bound_trials(spec, s, 64, writes_row=writes_row) == ()  # four blocks: 32 warps
    bound = {"variant": "fragment", "blocks_per_sm": 2}
    hinted = KernelSpec.model_validate({**LAYERNORM_ROPE_FP8, "schedule": bound})
    assert ptxas_bound_trials(hinted, planned(LAYERNORM_ROPE_FP8, **bound).schedule, 115, writes_row=writes_row) == ()
    streamed = planned(LAYERNORM_ROPE_FP8, variant="stream").schedule
    assert ptxas_bound_trials(spec, streamed, 115, writes_row=writes_row) == ()


def test_trials_lower_a_bound_that_ptxas_met_by_spilling_many_bytes():
    p = planned(ROPE_FP8_SPILLED)
    spec = KernelSpec.model_validate(ROPE_FP8_SPILLED)
    many = p.routes[-1].schedule
    assert (many.variant, many.threads, many.blocks_per_sm) == ("fragment", 576, 2)
    assert p.writes_row  # Y
    assert ptxas_bound_trials(spec, many, 56, PTXAS_SPILL_RELAX_BYTES, writes_row=True) == (1,)
    # A few spilled words (reloaded once) cost less than the block the bound keeps (perf/probe84).
    assert ptxas_bound_trials(spec, many, 56, PTXAS_SPILL_RELAX_BYTES - 8, writes_row=True) == ()
    rereading = planned(ROPE_FP8_SPILLED, variant="reread", blocks_per_sm="auto").routes[-1].schedule
    assert ptxas_bound_trials(spec, replace(rereading, blocks_per_sm=4), 40, 40, writes_row=True) == (3, 2, 1)
    hinted = KernelSpec.model_validate({**ROPE_FP8_SPILLED, "schedule": {"blocks_per_sm": 2}})
    assert ptxas_bound_trials(hinted, many, 56, 96, writes_row=True) == ()
    assert ptxas_bound_trials(spec, replace(many, blocks_per_sm=1), 255, 96, writes_row=True) == ()  # no bound to lower


def test_a_row_writing_only_fp8_keeps_its_second_block_over_a_spill_under_72_bytes():
    """Lowered to one block, an SM loads nothing while its row waits at each reduction, and a kernel writing
    only FP8 has no row stores to fill those waits (perf/probe123: nine such rows at 32–64 bytes spilled ran
    1.15 × faster kept at two blocks); rows writing Y or residual_out, larger spills and other bounds lower."""
    p = planned(FP8_ONLY_SPILLED)
    spec = KernelSpec.model_validate(FP8_ONLY_SPILLED)
    many = p.routes[-1].schedule
    assert (many.variant, many.threads, many.blocks_per_sm) == ("fragment", 512, 2)
    assert not p.writes_row  # FP8, its scales and the mean: nothing of the activations' width and dtype
    for spilled in (PTXAS_SPILL_RELAX_BYTES, 40, PTXAS_SPILL_KEEP_TWO_BLOCKS_BYTES - 8):
        assert ptxas_bound_trials(spec, many, 64, spilled, writes_row=False) == ()
        assert spill_kept(many, spilled, False) == "two blocks an SM, which ran faster than one for a row that writes only FP8"
        assert ptxas_bound_trials(spec, many, 64, spilled, writes_row=True) == (1,)
        assert spill_kept(many, spilled, True) == ""
    assert ptxas_bound_trials(spec, many, 64, PTXAS_SPILL_KEEP_TWO_BLOCKS_BYTES, writes_row=False) == (1,)
    assert ptxas_bound_trials(spec, replace(many, blocks_per_sm=4), 48, 56, writes_row=False) == (3, 2, 1)
    rereading = replace(planned(FP8_ONLY_SPILLED, variant="reread", blocks_per_sm="auto").routes[-1].schedule, blocks_per_sm=2)
    assert rereading.variant == "reread"
    assert ptxas_bound_trials(spec, rereading, 64, 40, writes_row=False) == (1,)
    assert spill_kept(many, PTXAS_SPILL_RELAX_BYTES - 8, True) == "a few words, which ran faster than one block fewer"
    # Y written: a row of the activations' width and dtype.
    assert planned({**FP8_ONLY_SPILLED, "outputs": {"y": True}}).writes_row


def fake_compiles(monkeypatch, resources_by_blocks: dict[int, Resources]):
    """Trial compiles answered from a table (blocks per SM → what ptxas gave each program), without TileLang;
    a program of one block an SM has no bound to annotate."""

    def compile_all(paths, jobs, verbose, compiled, tolerant=False):
        answers = []
        for path in paths:
            text = open(path).read()
            blocks = next((b for b in resources_by_blocks if f"T.annotate_min_blocks_per_sm({b})" in text), 1)
            programs = text.count("@T.prim_func")
            answers.append([("source", resources_by_blocks[blocks])] * programs if blocks in resources_by_blocks else [])
        return answers

    monkeypatch.setattr(build, "_compile_all", compile_all)


def test_the_most_blocks_without_a_spill_are_kept(monkeypatch, tmp_path):
    p = planned(LAYERNORM_ROPE_FP8)
    fake_compiles(monkeypatch, {3: Resources(80, 0), 4: Resources(64, 72), 5: Resources(48, 184)})
    found = build._ptxas_bounds([p], [[("source", Resources(115, 0))]], tmp_path / "trials", 1, False)
    assert found == {0: (CompiledBound(1, 3, 80, 115),)}
    # A bound ptxas met at every count: the most; one it met nowhere (or could not compile): none.
    fake_compiles(monkeypatch, {3: Resources(80, 0), 4: Resources(64, 0), 5: Resources(48, 0)})
    assert build._ptxas_bounds([p], [[("source", Resources(115, 0))]], tmp_path / "trials", 1, False)[0][0].blocks == 5
    fake_compiles(monkeypatch, {3: Resources(80, 8), 4: Resources(64, 72)})
    assert build._ptxas_bounds([p], [[("source", Resources(115, 0))]], tmp_path / "trials", 1, False) == {}


def test_the_most_blocks_under_the_spilling_bound_without_a_spill_are_kept(monkeypatch, tmp_path):
    p = planned(ROPE_FP8_SPILLED)
    *split, many = p.programs  # its few-token splits (1 KB parts up to 8 tokens, 3 KB to 64) did not spill
    fake_compiles(monkeypatch, {1: Resources(80, 0)})
    planned_resources = [[("source", Resources(64, 0))] * len(split) + [("source", Resources(56, 96))]]
    found = build._ptxas_bounds([p], planned_resources, tmp_path / "trials", 1, False)
    assert found == {0: (CompiledBound(many[0].first_tokens, 1, 80, 56, 96),)}
    why = build._bounded(p, found[0]).routes[-1].schedule.reasons[-1]
    assert why.startswith("lowered to 1 block(s) per SM by compiling it: under the planner's bound of 2 ptxas spilled 96 bytes")
    # Spilled under every lower bound too: the planner's bound stays.
    fake_compiles(monkeypatch, {1: Resources(80, 16)})
    assert build._ptxas_bounds([p], planned_resources, tmp_path / "trials", 1, False) == {}


def test_tuned_kernels_keep_what_was_measured(monkeypatch, tmp_path):
    spec = KernelSpec.model_validate(LAYERNORM_ROPE_FP8)
    tuned = (TunedRoute(1, None, {"variant": "fragment", "threads": 256}, "test"),)
    p = plan(spec, "x.toml", tuned)
    fake_compiles(monkeypatch, {3: Resources(80, 0)})
    assert build._ptxas_bounds([p], [[("source", Resources(115, 0))]], tmp_path / "trials", 1, False) == {}


def test_the_build_bounds_by_ptxas_and_says_why(tmp_path, capfd):
    """The real compile: `fusegen build`'s stage raises the planner's bound where ptxas's count keeps two
    blocks, to what ptxas meets without a spill; the kernel's identity stays (it follows from the spec).
    Compiling the kept trial again is a hit in TileLang's memory cache, whose warning the user is spared."""
    logging.getLogger("tilelang").setLevel(logging.WARNING)
    p = planned(LAYERNORM_ROPE_FP8)
    (built,) = build.stage([p], tmp_path, jobs=1)
    assert "memory cache" not in capfd.readouterr().err
    s = built.plan.schedule
    (resources,) = built.resources
    assert s.blocks_per_sm > max(p.schedule.blocks_per_sm, 1)
    assert resources.stack_bytes == 0 and resources.registers <= registers_allotted(s.blocks_per_sm, s.threads)
    assert s.reasons[-1].startswith(f"raised to {s.blocks_per_sm} blocks per SM by compiling it")
    assert built.plan.identity == p.identity
    assert f"__launch_bounds__({s.threads}, {s.blocks_per_sm})" in built.files["kernel.cu"]
    assert all(check.ok for check in built.checks), [c for c in built.checks if not c.ok]


@testing.requires_gpu
@pytest.mark.parametrize("tokens", [1, 37, 4096, 16384])
@pytest.mark.parametrize(
    ("spec", "blocks", "bounded"),
    [(LAYERNORM_ROPE_FP8, 3, "raised to"), (ROPE_FP8_SPILLED, 1, "lowered to"), (FP8_ONLY_SPILLED, 2, None)],
)
def test_a_kernel_bounded_by_ptxas_matches_its_reference(spec, blocks, bounded, tokens, tmp_path):
    """The bounded kernel as built (the same code as the planner's, under another launch bound, or under its
    own with a spill the build keeps), with fresh inputs and poisoned outputs, on every route."""
    module = checking.build_staged(KernelSpec.model_validate(spec), tmp_path)
    many = json.loads((Path(module.__file__).parent / "plan.json").read_text())["routes"][-1]["schedule"]
    assert many["blocks_per_sm"] == blocks
    assert many["reasons"][-1].startswith(bounded) if bounded else not any(why.startswith(("lowered", "raised")) for why in many["reasons"])
    checking.run_and_compare(module, tokens)


def test_the_build_lowers_a_bound_ptxas_spilled_under_and_says_why(tmp_path):
    """The real compile: the planner's two blocks of 576 threads, which ptxas met by spilling, become one
    block without a spill; the program of few tokens keeps its own."""
    logging.getLogger("tilelang").setLevel(logging.WARNING)
    p = planned(ROPE_FP8_SPILLED)
    (built,) = build.stage([p], tmp_path, jobs=1)
    many = built.plan.routes[-1].schedule
    assert (many.threads, many.blocks_per_sm) == (576, 1)
    assert many.reasons[-1].startswith("lowered to 1 block(s) per SM by compiling it")
    assert built.plan.routes[0].schedule == p.routes[0].schedule
    assert all(r is not None and r.stack_bytes == 0 for r in built.resources), built.resources
    assert built.plan.identity == p.identity
    assert all(check.ok for check in built.checks), [c for c in built.checks if not c.ok]


def test_the_build_keeps_two_blocks_for_a_row_writing_only_fp8_that_spilled_a_little(tmp_path, capsys):
    """The real compile: ptxas meets the planner's two blocks of 512 threads by spilling under 72 bytes; the
    kernel writes only FP8, so the build keeps them, and its line says why the spill stays."""
    from fusegen import cli

    logging.getLogger("tilelang").setLevel(logging.WARNING)
    spec_file = tmp_path / "fp8_only.toml"
    spec_file.write_text(dump(FP8_ONLY_SPILLED))
    assert cli.main(["build", str(spec_file), "--out", str(tmp_path / "generated"), "--jobs", "2"]) == 0
    printed = capsys.readouterr().out
    data = json.loads((tmp_path / "generated" / FP8_ONLY_SPILLED["name"] / "plan.json").read_text())
    many = data["routes"][-1]["schedule"]
    assert (many["threads"], many["blocks_per_sm"]) == (512, 2)
    assert not any(why.startswith("lowered to") for why in many["reasons"])
    spilled = [line for line in printed.splitlines() if "ptxas spilled" in line]
    assert len(spilled) == 1, printed
    stack = int(spilled[0].split("(")[1].split(" B")[0])
    assert PTXAS_SPILL_RELAX_BYTES <= stack < PTXAS_SPILL_KEEP_TWO_BLOCKS_BYTES
    assert spilled[0].endswith(
        "correct; two blocks an SM, which ran faster than one for a row that writes only FP8; `fusegen tune` times other schedules"
    )


def test_tune_times_the_planners_program_as_the_build_bounds_it(tmp_path):
    """`fusegen tune`'s first candidate, which the others must beat and which it records where it wins, is
    the program `fusegen build` gives an untuned spec: under the bound from ptxas's registers."""
    from fusegen.tune import as_built, candidates

    logging.getLogger("tilelang").setLevel(logging.WARNING)
    spec = KernelSpec.model_validate(LAYERNORM_ROPE_FP8)
    found = candidates(spec)
    ((_, timed),) = as_built([(spec, found)], tmp_path, 1)
    assert found[0].plan.schedule.blocks_per_sm == 1
    assert timed[0].plan.schedule.blocks_per_sm == timed[0].hints["blocks_per_sm"] == 3
    # The program as planned, which the build's bound replaced, is timed too; the same bound hinted is the built program.
    assert timed[1].hints == found[0].hints and timed[1].replaced_by_rule
    assert timed[2:] == [c for c in found[1:] if c.hints != timed[0].hints]
    assert len({c.plan.identity for c in timed}) == len(timed)


def test_tune_times_the_program_as_planned_where_the_build_moved_its_bound():
    """Where the build lowered a spilling bound (or raised one), the planner's program under its own bound is a
    program a rule replaced: the full search and quick both time it, once, after the program as built."""
    from fusegen.tune import _with_build_replaced, candidates, quick_candidates

    spec = KernelSpec.model_validate(ROPE_FP8_SPILLED)
    found = candidates(spec)
    many = found[0].plan.programs[-1][0].first_tokens
    lowered = build._bounded(found[0].plan, (CompiledBound(many, 1, 80, 56, 96),))
    timed = _with_build_replaced(spec, found, lowered)
    assert [c.plan.schedule.blocks_per_sm for c in timed[:2]] == [1, 2]
    assert timed[1].hints == found[0].hints and timed[1].replaced_by_rule
    assert [r.schedule.blocks_per_sm for r in timed[1].plan.routes][-1] == 2
    assert len({json.dumps(c.hints, sort_keys=True) for c in timed}) == len(timed)
    # Each candidate a torch op of its own: one identity's modules all run the newest one imported.
    assert len({c.plan.identity for c in timed}) == len(timed)
    assert quick_candidates(timed)[:2] == timed[:2]
    # Built as planned: nothing replaced, nothing added.
    assert _with_build_replaced(spec, found, found[0].plan) == found


def test_fusegen_load_builds_the_bound_and_finds_it_again(tmp_path, monkeypatch):
    """The drop-in path builds what `fusegen build` builds (the bound from ptxas's registers), and its cache
    entry, keyed by the kernel's identity, which the bound leaves as it was, is imported by a new process
    that may not compile."""
    monkeypatch.setenv("FUSEGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("FUSEGEN_NO_COMPILE", raising=False)
    text = dump(LAYERNORM_ROPE_FP8)
    heard = []
    module = fusegen.load(text, notify=heard.append)
    assert [line for line in heard if line.startswith("bounded ")] == [
        f"bounded {LAYERNORM_ROPE_FP8['name']}: 3 blocks per SM from 1 tokens"
    ]
    routes = json.loads((Path(module.__file__).parent / "plan.json").read_text())["routes"]
    assert routes[-1]["schedule"]["blocks_per_sm"] == 3
    assert module.IDENTITY == planned(LAYERNORM_ROPE_FP8).identity
    child = "import sys, fusegen; print(fusegen.load(sys.stdin.read()).IDENTITY)"
    env = {**os.environ, "PYTHONPATH": str(Path(fusegen.__file__).parents[1]), "FUSEGEN_NO_COMPILE": "1"}
    done = subprocess.run([sys.executable, "-c", child], input=text, capture_output=True, text=True, env=env, cwd="/", timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [module.IDENTITY]
