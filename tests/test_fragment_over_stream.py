"""The fragment program over wide_stream's stream (schedule.fragment_over_stream_blocks, build.stage): where
the planner streams a wide row because its estimate keeps few fragment blocks an SM, `fusegen build` compiles
the fragment program the stream replaced and keeps it where ptxas holds more blocks of it than the stream
was measured against (perf/probe109, perf/probe111)."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path

import pytest
from test_ptxas_bounds import fake_compiles

from fusegen import build, checking, testing
from fusegen.compile import Resources
from fusegen.emit import render
from fusegen.model import FragmentOverStream
from fusegen.plan import over_stream_trial, plan
from fusegen.schedule import PTXAS_SPILL_RELAX_BYTES, WIDE_STREAM_MAX_FRAGMENT_BLOCKS, fragment_over_stream_blocks
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


def planned(spec: dict, **hints):
    return plan(KernelSpec.model_validate({**spec, "schedule": hints}), "x.toml")


def test_the_trial_declines_only_the_planners_wide_stream():
    p = planned(LAYERNORM_FP8_STREAMED)
    assert p.schedule.variant == "stream"
    trial = over_stream_trial(p)
    assert trial.schedule.variant == "fragment" and trial.fragment_over_stream == FragmentOverStream()
    assert trial.identity == p.identity and trial.spec == p.spec
    # the program the variant hint plans, a reason more
    hinted = planned(LAYERNORM_FP8_STREAMED, variant="fragment")
    assert [r.schedule for r in hinted.routes] == [replace(r.schedule, reasons=r.schedule.reasons[:-1]) for r in trial.routes]
    assert render(trial)["kernel.py"].count("@T.prim_func") == 1
    assert over_stream_trial(hinted) is None
    assert over_stream_trial(planned(LAYERNORM_FP8_STREAMED, variant="stream")) is None
    assert over_stream_trial(trial) is None
    tuned = (TunedRoute(1, None, {"variant": "stream", "threads": 128}, "test"),)
    assert over_stream_trial(plan(KernelSpec.model_validate(LAYERNORM_FP8_STREAMED), "x.toml", tuned)) is None
    narrow = planned({**LAYERNORM_FP8_STREAMED, "hidden": 2048})
    assert narrow.schedule.variant == "fragment" and over_stream_trial(narrow) is None


def test_more_blocks_than_the_stream_was_measured_against_keep_the_fragment_program():
    fragment = over_stream_trial(planned(LAYERNORM_FP8_STREAMED)).schedule
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
    program compiles to few blocks keeps its stream."""
    logging.getLogger("tilelang").setLevel(logging.WARNING)
    streamed, stays = planned(LAYERNORM_FP8_STREAMED), planned(LAYERNORM_ROPE_FP8_F32)
    heard = []
    kept, streaming = build.stage([streamed, stays], tmp_path, jobs=2, notify=heard.append)
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
    assert not (tmp_path / build.TRIALS).exists()


@testing.requires_gpu
@pytest.mark.parametrize("tokens", [1, 37, 1025, 16384])
def test_the_kept_fragment_program_matches_its_reference(tokens, tmp_path):
    """The kernel as built, with fresh inputs and poisoned outputs, on counts the stream's route served and
    the few-token route's."""
    module = checking.build_staged(KernelSpec.model_validate(LAYERNORM_FP8_STREAMED), tmp_path)
    assert json.loads((Path(module.__file__).parent / "plan.json").read_text())["fragment_over_stream"]["blocks"] > 4
    checking.run_and_compare(module, tokens)
