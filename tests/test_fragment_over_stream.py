"""The fragment program over wide_stream's stream (schedule.fragment_over_stream_blocks, build.stage): where
the planner streams a wide row because its estimate keeps few fragment blocks an SM, `fusegen build` compiles
the fragment program the stream replaced and keeps it where ptxas holds more blocks of it than the stream
was measured against (perf/probe109, perf/probe111)."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import replace
from pathlib import Path

import pytest
from test_ptxas_bounds import fake_compiles

from fusegen import build, checking, testing
from fusegen import plan as plan_module
from fusegen.compile import Resources
from fusegen.emit import render
from fusegen.errors import ChainError
from fusegen.model import FragmentOverStream
from fusegen.plan import over_stream_trials, plan, plan_as_dict
from fusegen.schedule import PTXAS_SPILL_RELAX_BYTES, WIDE_STREAM_MAX_FRAGMENT_BLOCKS, fragment_over_stream_blocks, resident_blocks
from fusegen.spec import KernelSpec
from fusegen.tuning import TunedRoute

# perf/probe109's p109_layernorm_token_e4m3fn_float16_5120: streamed by the planner (its estimate: four
# fragment blocks an SM); as compiled the fragment program holds more, and ran 1.21 × the stream on the H100.
LAYERNORM_FP8_STREAMED = {
    "name": "ln_fp8_token_f16_5120",
    "dtype": "float16",
    "hidden": 5120,
    "op": [{"kind": "layernorm"}, {"kind": "quant_fp8", "group_size": "token"}],
    "outputs": {"y": False},
}

# The sweep's fp32 LayerNorm → RoPE → FP8 g128 7168: its fragment program, compiled, holds three blocks an SM
# (perf/probe111's cpu-blocks.txt); the stream stays.
LAYERNORM_ROPE_FP8_F32 = {
    "name": "ln_rope_fp8_f32_7168",
    "dtype": "float32",
    "hidden": 7168,
    "op": [
        {"kind": "layernorm", "eps": 1e-05},
        {"kind": "rope", "rope_dim": 64, "span": "tail", "style": "neox"},
        {"kind": "quant_fp8", "group_size": 128},
    ],
    "outputs": {"y": False},
}

# perf/probe109's fp16 LayerNorm → per-token FP8 6144: variant "fragment" plans 256 threads (64 registers
# compiled, four blocks an SM: the stream stays), the stream 128; the fragment program on those 128, bounded
# at six blocks, ran 1.17 × the stream on the H100 (perf/probe121) and 1.14 × on the H200 (perf/probe109).
LAYERNORM_FP8_STREAM_THREADS = {**LAYERNORM_FP8_STREAMED, "name": "ln_fp8_token_f16_6144", "hidden": 6144}


def planned(spec: dict, **hints):
    return plan(KernelSpec.model_validate({**spec, "schedule": hints}), "x.toml")


def test_the_trial_declines_only_the_planners_wide_stream():
    p = planned(LAYERNORM_FP8_STREAMED)
    assert p.schedule.variant == "stream"
    (trial,) = over_stream_trials(p)  # the stream's threads are variant "fragment"'s: one trial
    assert trial.schedule.variant == "fragment" and trial.fragment_over_stream == FragmentOverStream()
    assert trial.identity == p.identity and trial.spec == p.spec
    # the program the variant hint plans, a reason more
    hinted = planned(LAYERNORM_FP8_STREAMED, variant="fragment")
    assert [r.schedule for r in hinted.routes] == [replace(r.schedule, reasons=r.schedule.reasons[:-1]) for r in trial.routes]
    assert render(trial)["kernel.py"].count("@T.prim_func") == 1
    assert over_stream_trials(hinted) == ()
    assert over_stream_trials(planned(LAYERNORM_FP8_STREAMED, variant="stream")) == ()
    assert over_stream_trials(trial) == ()
    tuned = (TunedRoute(1, None, {"variant": "stream", "threads": 128}, "test"),)
    assert over_stream_trials(plan(KernelSpec.model_validate(LAYERNORM_FP8_STREAMED), "x.toml", tuned)) == ()
    narrow = planned({**LAYERNORM_FP8_STREAMED, "hidden": 2048})
    assert narrow.schedule.variant == "fragment" and over_stream_trials(narrow) == ()


def test_the_stream_s_own_threads_are_weighed_too_where_they_differ():
    p = planned(LAYERNORM_FP8_STREAM_THREADS)
    assert (p.schedule.variant, p.schedule.threads) == ("stream", 128)
    fragment, on_stream_threads = over_stream_trials(p)
    assert fragment.fragment_over_stream == FragmentOverStream() and fragment.schedule.threads == 256
    assert on_stream_threads.fragment_over_stream == FragmentOverStream(threads=128)
    assert (on_stream_threads.schedule.variant, on_stream_threads.schedule.threads) == ("fragment", 128)
    assert on_stream_threads.identity == p.identity and on_stream_threads.spec == p.spec
    # only the route of many tokens moves: the fewer tokens' routes keep their own rules' threads
    assert on_stream_threads.routes[:-1] == fragment.routes[:-1]
    assert on_stream_threads.primary.first_tokens == fragment.primary.first_tokens
    layout = on_stream_threads.schedule.reasons[0]
    assert "the stream's 128 threads" in layout and "hint" not in layout
    assert "threads" not in plan_as_dict(fragment)["fragment_over_stream"]  # plan.json as before the rule
    assert plan_as_dict(on_stream_threads)["fragment_over_stream"]["threads"] == 128


def test_a_stream_s_threads_that_hold_no_fragment_program_leave_one_trial(monkeypatch):
    """Never met on a draw (the stream holds at most 56 values a thread, fewer than a fragment program may), but
    a planner rule that refused them must not fail the build: the fragment program on its own threads is weighed."""
    routes = plan_module._over_stream_routes

    def refusing(spec, over_stream):
        if over_stream.threads is not None:
            raise ChainError("schedule.threads", "no fragment program on these threads")
        return routes(spec, over_stream)

    monkeypatch.setattr(plan_module, "_over_stream_routes", refusing)
    (trial,) = over_stream_trials(planned(LAYERNORM_FP8_STREAM_THREADS))
    assert (trial.fragment_over_stream, trial.schedule.threads) == (FragmentOverStream(), 256)


def fake_compiles_by_threads(monkeypatch, resources: dict[tuple[int, int], Resources]):
    """Trial compiles answered by (threads, blocks per SM of the launch bound, 1 where none), without TileLang."""

    def compile_all(paths, jobs, verbose, compiled, tolerant=False):
        answers = []
        for path in paths:
            text = open(path).read()
            threads = int(re.search(r"fused_program\(threads=(\d+)", text).group(1))
            blocks = int(found.group(1)) if (found := re.search(r"annotate_min_blocks_per_sm\((\d+)\)", text)) else 1
            answer = resources.get((threads, blocks))
            answers.append([("source", answer)] * text.count("@T.prim_func") if answer else [])
        return answers

    monkeypatch.setattr(build, "_compile_all", compile_all)


def test_the_build_keeps_the_trial_ptxas_holds_most_blocks_of(monkeypatch, tmp_path):
    p = planned(LAYERNORM_FP8_STREAM_THREADS)
    # as compiled (perf/probe121): 256 threads four blocks at 64 registers, 128 threads six under a bound
    fake_compiles_by_threads(monkeypatch, {(256, 1): Resources(64, 0), (128, 1): Resources(128, 0), (128, 6): Resources(80, 0)})
    (kept,) = build._fragments_over_streams([p], tmp_path / "trials", 1, False).values()
    assert kept.fragment_over_stream == FragmentOverStream(6, 80, 128)
    assert (kept.schedule.variant, kept.schedule.threads, kept.schedule.blocks_per_sm) == ("fragment", 128, 6)
    assert kept.routes[:-1] == over_stream_trials(p)[0].routes[:-1]
    # a tie keeps variant "fragment"'s threads; more blocks of them keep those
    assert resident_blocks(48, 256) == resident_blocks(96, 128) == 5 and resident_blocks(40, 256) == 6
    fake_compiles_by_threads(monkeypatch, {(256, 1): Resources(48, 0), (128, 1): Resources(96, 0)})
    (kept,) = build._fragments_over_streams([p], tmp_path / "trials", 1, False).values()
    assert (kept.schedule.threads, kept.fragment_over_stream) == (256, FragmentOverStream(5, 48))
    fake_compiles_by_threads(monkeypatch, {(256, 1): Resources(40, 0), (128, 1): Resources(96, 0)})
    (kept,) = build._fragments_over_streams([p], tmp_path / "trials", 1, False).values()
    assert (kept.schedule.threads, kept.fragment_over_stream) == (256, FragmentOverStream(6, 40))
    # neither over four blocks: the stream stays
    fake_compiles_by_threads(monkeypatch, {(256, 1): Resources(64, 0), (128, 1): Resources(128, 0)})
    assert build._fragments_over_streams([p], tmp_path / "trials", 1, False) == {}


def test_more_blocks_than_the_stream_was_measured_against_keep_the_fragment_program():
    (fragment,) = (trial.schedule for trial in over_stream_trials(planned(LAYERNORM_FP8_STREAMED)))
    assert (fragment.threads, fragment.blocks_per_sm or 1) == (128, 1)
    assert fragment_over_stream_blocks(fragment, 72, 0) == 7
    assert fragment_over_stream_blocks(fragment, 96, PTXAS_SPILL_RELAX_BYTES - 8) == 5  # a few words, as the build allows
    assert fragment_over_stream_blocks(fragment, 96, PTXAS_SPILL_RELAX_BYTES) is None
    assert fragment_over_stream_blocks(fragment, 128, 0) is None  # four blocks: the stream's ground
    assert fragment_over_stream_blocks(replace(fragment, blocks_per_sm=6), 80, 0) == 6
    assert fragment_over_stream_blocks(planned(LAYERNORM_FP8_STREAMED).schedule, 32, 0) is None


def test_the_build_weighs_the_fragment_program_as_ptxas_compiled_it(monkeypatch, tmp_path):
    p = planned(LAYERNORM_FP8_STREAMED)
    # Unbounded, ptxas's 96 registers keep five blocks (20 warps): the trials raise it to the six met at 80.
    fake_compiles(monkeypatch, {1: Resources(96, 0), 6: Resources(80, 0), 7: Resources(72, 40), 8: Resources(64, 96)})
    (kept,) = build._fragments_over_streams([p], tmp_path / "trials", 1, False).values()
    assert kept.fragment_over_stream == FragmentOverStream(6, 80)
    assert (kept.schedule.variant, kept.schedule.blocks_per_sm) == ("fragment", 6)
    assert kept.schedule.reasons[-1].startswith("variant auto → fragment, not wide_stream's stream, by compiling it: ptxas gave")
    assert kept.identity == p.identity and not (tmp_path / "trials").exists()
    fake_compiles(monkeypatch, {1: Resources(128, 0), 5: Resources(96, 64), 6: Resources(80, 64), 7: Resources(72, 64)})
    assert build._fragments_over_streams([p], tmp_path / "trials", 1, False) == {}  # four blocks, the rest spilled
    fake_compiles(monkeypatch, {})  # TileLang could not compile the trial: the stream stays
    assert build._fragments_over_streams([p], tmp_path / "trials", 1, False) == {}
    # a plan kept so is not tried again, nor a kernel that does not stream
    fake_compiles(monkeypatch, {1: Resources(64, 0)})
    assert build._fragments_over_streams([kept, planned({**LAYERNORM_FP8_STREAMED, "hidden": 2048})], tmp_path / "t", 1, False) == {}
    assert build._bounded(kept, ()).fragment_over_stream == kept.fragment_over_stream


def test_the_build_keeps_the_fragment_program_and_says_why(tmp_path):
    """The real compile: the planner's stream becomes the fragment program ptxas holds more than four blocks
    of, on every count (one program); plan.json says so; the kernel's identity stays. A row whose fragment
    program compiles to few blocks keeps its stream; one that holds more of it on the stream's threads takes
    those."""
    logging.getLogger("tilelang").setLevel(logging.WARNING)
    streamed, stays = planned(LAYERNORM_FP8_STREAMED), planned(LAYERNORM_ROPE_FP8_F32)
    heard = []
    kept, streaming, on_stream_threads = build.stage(
        [streamed, stays, planned(LAYERNORM_FP8_STREAM_THREADS)], tmp_path, jobs=2, notify=heard.append
    )
    blocks = kept.plan.fragment_over_stream.blocks
    assert blocks > WIDE_STREAM_MAX_FRAGMENT_BLOCKS
    assert f"kept the fragment program of {streamed.name} over the stream: {blocks} blocks per SM compiled" in heard
    assert [r.schedule.variant for r in kept.plan.routes] == ["fragment"]
    (resources,) = kept.resources
    assert (
        resources.stack_bytes < PTXAS_SPILL_RELAX_BYTES
        and fragment_over_stream_blocks(kept.plan.schedule, resources.registers, 0) == blocks
    )
    data = json.loads(kept.files["plan.json"])
    assert data["fragment_over_stream"] == {"blocks": blocks, "registers": resources.registers}
    assert data["identity"] == streamed.identity
    assert all(check.ok for check in kept.checks), [c for c in kept.checks if not c.ok]
    assert streaming.plan.schedule.variant == "stream" and streaming.plan.fragment_over_stream is None
    assert "fragment_over_stream" not in json.loads(streaming.files["plan.json"])
    over_stream = on_stream_threads.plan.fragment_over_stream
    assert (over_stream.threads, on_stream_threads.plan.schedule.threads) == (128, 128)
    assert over_stream.blocks > WIDE_STREAM_MAX_FRAGMENT_BLOCKS
    assert json.loads(on_stream_threads.files["plan.json"])["fragment_over_stream"]["threads"] == 128
    assert all(check.ok for check in on_stream_threads.checks), [c for c in on_stream_threads.checks if not c.ok]
    assert not (tmp_path / build.TRIALS).exists()


@testing.requires_gpu
@pytest.mark.parametrize("spec", [LAYERNORM_FP8_STREAMED, LAYERNORM_FP8_STREAM_THREADS], ids=lambda spec: spec["name"])
@pytest.mark.parametrize("tokens", [1, 37, 1025, 16384])
def test_the_kept_fragment_program_matches_its_reference(spec, tokens, tmp_path):
    """The kernel as built, with fresh inputs and poisoned outputs, on counts the stream's route served and
    the few-token route's."""
    module = checking.build_staged(KernelSpec.model_validate(spec), tmp_path)
    assert json.loads((Path(module.__file__).parent / "plan.json").read_text())["fragment_over_stream"]["blocks"] > 4
    checking.run_and_compare(module, tokens)
