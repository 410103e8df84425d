"""The tuning file and its use by the planner and build (CPU): routes by token count, pinned hints
winning over tuned ones, damaged files reported by key, and the tune command's candidate space."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest
from cases import EXAMPLE_KERNELS, planner_routed_cases, spec_for

from fusegen.emit import render
from fusegen.errors import SpecError
from fusegen.plan import plan, staged_inputs
from fusegen.spec import KernelSpec, load_spec
from fusegen.tune import candidates
from fusegen.tuning import (
    BUCKETS,
    MAX_TUNING_BYTES,
    BucketWinner,
    GpuWinners,
    Measured,
    NearbyRoute,
    Tuning,
    TuningTable,
    WinnerHints,
    problem_key,
    routes_for,
    save_table,
    with_winners,
)

ROOT = Path(__file__).resolve().parent.parent
GPU = "Test GPU"


def spec_of(**changes) -> KernelSpec:
    spec, _ = load_spec(ROOT / "specs" / "rms_norm_rope_quant_fp8_only.toml")
    return spec.model_copy(update=changes)


def hints(threads: int, block_m: int = 1, prefetch: bool = True) -> dict:
    return {"variant": "fragment", "block_m": block_m, "threads": threads, "blk_k": "auto", "prefetch": prefetch}


def winners_of(*per_bucket: dict) -> GpuWinners:
    return GpuWinners(
        measured={"date": "2026-11-29T00:00:00+00:00", "commit": "abc1234"},
        buckets=[
            BucketWinner(
                first_tokens=b.first_tokens,
                last_tokens=b.last_tokens,
                measured_at=b.measured_at,
                hints=WinnerHints.model_validate(h),
                median_us=1.0,
                planner_median_us=1.1,
                candidates=3,
            )
            for b, h in zip(BUCKETS, per_bucket)
        ],
    )


def table_for(spec: KernelSpec, *per_bucket: dict) -> TuningTable:
    return with_winners(TuningTable(), spec, GPU, winners_of(*per_bucket))


def test_adjacent_buckets_with_one_winner_become_one_route():
    spec = spec_of()
    routes = routes_for(table_for(spec, hints(256), hints(256), hints(128)), spec, GPU)
    assert [(r.first_tokens, r.last_tokens, r.hints["threads"]) for r in routes] == [(1, 1024, 256), (1025, None, 128)]
    assert routes_for(table_for(spec, hints(128), hints(128), hints(128)), spec, GPU)[0].last_tokens is None


def test_winners_are_keyed_by_problem_not_by_name_or_gpu():
    spec = spec_of()
    table = table_for(spec, hints(256), hints(256), hints(128))
    assert routes_for(table, spec.model_copy(update={"name": "renamed"}), GPU)
    assert not routes_for(table, spec, "Another GPU")
    assert not routes_for(table, spec.model_copy(update={"hidden": 8192}), GPU)
    assert problem_key(spec) != problem_key(spec.model_copy(update={"dtype": "bfloat16"}))


def test_an_untuned_width_takes_the_winners_of_its_chain_at_the_nearest_tuned_width_of_its_bucket():
    tuned_4096 = spec_of(hidden=4096)
    table = with_winners(table_for(tuned_4096, *[hints(128)] * 3), spec_of(hidden=7168), GPU, winners_of(*[hints(256)] * 3))
    routes = routes_for(table, spec_of(hidden=6144, name="renamed"), GPU)
    assert [(type(r), r.tuned_hidden, r.hints["threads"]) for r in routes] == [(NearbyRoute, 7168, 256)]
    assert "at hidden 7168, the nearest tuned width" in routes[0].origin
    assert routes_for(table, spec_of(hidden=5120), GPU)[0].tuned_hidden == 4096
    p = plan(spec_of(hidden=5120), "x.toml", routes_for(table, spec_of(hidden=5120), GPU))
    assert (p.routes[0].schedule.variant, p.routes[0].schedule.threads) == ("fragment", 128)  # untuned: stream
    assert "nearest tuned width" in p.routes[0].origin


def test_winners_are_not_carried_across_a_width_bucket_nor_to_another_chain():
    table = table_for(spec_of(hidden=4096), hints(64), hints(64), hints(64))
    assert not routes_for(table, spec_of(hidden=2048), GPU)  # another octave
    assert not routes_for(table, spec_of(hidden=8192), GPU)
    assert not routes_for(table, spec_of(hidden=5120, dtype="bfloat16"), GPU)
    assert not routes_for(table, spec_of(hidden=5120), "Another GPU")


def test_nearby_winners_this_width_cannot_follow_leave_the_planner_its_own_rules():
    """64 threads × 1 row hold 80 values of a 5120 row (the limit is 64): tuned at 4096, unusable at 5120."""
    table = table_for(spec_of(hidden=4096), hints(64), hints(64), hints(64))
    spec = spec_of(hidden=5120)
    p = plan(spec, "x.toml", routes_for(table, spec, GPU))
    assert p.routes[0].origin.startswith("planner rules") and p.routes[0].schedule.threads != 64
    assert p.identity == plan(spec, "x.toml").identity


def test_plan_emits_one_program_per_route_and_the_launcher_routes_by_count():
    spec = spec_of()
    tuned = Tuning(table_for(spec, hints(512, prefetch=False), hints(256), hints(128, 2)), GPU, "t.json").routes(spec)
    p = plan(spec, "specs/x.toml", tuned)
    assert [(r.first_tokens, r.last_tokens) for r in p.routes] == [(1, 64), (65, 1024), (1025, None)]
    assert [(r.schedule.threads, r.schedule.block_m, r.schedule.prefetch) for r in p.routes] == [
        (512, 1, False),
        (256, 1, True),
        (128, 2, True),
    ]
    assert p.schedule is p.routes[-1].schedule
    text = render(p)["kernel.py"]
    assert "ROUTES = ((1, 64, program_0), (65, 1024, program_1), (1025, None, program_2),)" in text
    namespace: dict = {}
    exec(compile(text, "kernel.py", "exec"), namespace)
    launcher = namespace["launcher"]
    assert [launcher.route_index(t) for t in (1, 64, 65, 1024, 1025, 10**6)] == [0, 0, 1, 1, 2, 2]
    assert p.identity != plan(spec, "specs/x.toml").identity


def test_hints_pinned_by_the_spec_win_over_tuned_ones():
    spec = spec_of(schedule=spec_of().schedule.model_copy(update={"threads": 256}))
    table = with_winners(TuningTable(), spec, GPU, winners_of(hints(512), hints(512), hints(128, 2)))
    p = plan(spec, "x.toml", routes_for(table, spec, GPU))
    assert {r.schedule.threads for r in p.routes} == {256}


def test_a_pinned_token_count_keeps_only_its_route():
    spec = spec_of(tokens=100)
    table = table_for(spec, hints(512), hints(256), hints(128))
    p = plan(spec, "x.toml", routes_for(table, spec, GPU))
    assert [(r.first_tokens, r.last_tokens, r.schedule.threads) for r in p.routes] == [(1, None, 256)]


def test_save_is_write_if_different_and_round_trips(tmp_path):
    spec = spec_of()
    table = table_for(spec, hints(256), hints(256), hints(128))
    path = tmp_path / "tuning.json"
    assert save_table(path, table)
    assert not save_table(path, table)
    assert Tuning.load(path, GPU).routes(spec) == routes_for(table, spec, GPU)


@pytest.mark.parametrize(
    "damage, key",
    [
        (lambda d: d["problems"][next(iter(d["problems"]))]["gpus"][GPU]["buckets"][0].update(first_tokens=2), "problems."),
        (lambda d: d["problems"][next(iter(d["problems"]))]["gpus"][GPU]["buckets"][0]["hints"].update(threads="many"), "threads"),
        (lambda d: d.update(format=7), "format"),
        # Every string is held to its form: text from the file reaches generated docstrings.
        (lambda d: d["problems"][next(iter(d["problems"]))]["gpus"][GPU]["measured"].update(commit='"""\nimport os'), "measured.commit"),
        (lambda d: d["problems"][next(iter(d["problems"]))]["gpus"][GPU]["measured"].update(commit="a" * 41), "measured.commit"),
        (lambda d: d["problems"][next(iter(d["problems"]))]["gpus"][GPU]["measured"].update(date="yesterday"), "measured.date"),
        (lambda d: d["problems"][next(iter(d["problems"]))]["gpus"][GPU]["measured"].update(date="2026-13-45"), "measured.date"),
        (lambda d: d["problems"][next(iter(d["problems"]))]["gpus"][GPU]["measured"].update(torch="2.1 import os"), "measured.torch"),
        (lambda d: d["problems"][next(iter(d["problems"]))]["gpus"][GPU]["measured"].update(driver="580\n"), "measured.driver"),
        (lambda d: d["problems"][next(iter(d["problems"]))]["gpus"][GPU]["measured"].update(extra="x"), "measured.extra"),
        (
            lambda d: d["problems"][next(iter(d["problems"]))]["gpus"].update(
                {"GPU\u2028x": d["problems"][next(iter(d["problems"]))]["gpus"][GPU]}
            ),
            "gpus",
        ),
        (
            lambda d: d["problems"][next(iter(d["problems"]))]["gpus"].update(
                {"G" * 65: d["problems"][next(iter(d["problems"]))]["gpus"][GPU]}
            ),
            "gpus",
        ),
        (lambda d: d["problems"][next(iter(d["problems"]))].update(problem="rmsnorm\x1b[2J"), "problem"),
        (lambda d: d["problems"].update({"not a key": d["problems"][next(iter(d["problems"]))]}), "problems"),
    ],
)
def test_a_damaged_tuning_file_is_an_error_naming_the_key(tmp_path, damage, key):
    spec = spec_of()
    data = table_for(spec, hints(256), hints(256), hints(128)).model_dump(mode="json")
    damage(data)
    path = tmp_path / "tuning.json"
    path.write_text(json.dumps(data))
    with pytest.raises(SpecError) as caught:
        Tuning.load(path, GPU)
    assert str(path) in str(caught.value) and key in caught.value.key


def test_build_reports_a_damaged_tuning_file_and_writes_nothing(tmp_path):
    (tmp_path / "tuning.json").write_text("{not json")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "fusegen",
            "build",
            str(ROOT / "specs" / "rms_norm.toml"),
            "--out",
            str(tmp_path / "out"),
            "--tuning",
            str(tmp_path / "tuning.json"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 2, result.stderr
    assert "tuning.json" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_candidates_start_with_the_planner_choice_and_respect_pinned_hints():
    spec = spec_of()
    found = candidates(spec)
    # One row per block with its side inputs prefetched, no launch bound (schedule.py).
    assert found[0].hints == {
        **hints(plan(spec, "x").schedule.threads),
        "variant": "fragment",
        "prefetch": True,
        "joint_reduction": False,
        "blocks_per_sm": 1,
        "ring_slots": "auto",
    }
    keys = [json.dumps(c.hints, sort_keys=True) for c in found]
    assert len(keys) == len(set(keys)) > 10
    assert {c.hints["prefetch"] for c in found} == {True, False}
    assert {c.hints["joint_reduction"] for c in found} == {True, False}  # the chain allows it: both are timed
    streamed = [c for c in found if c.hints["variant"] == "stream"]
    # Persistent grids of several sizes, each with the joint reduction the stream variant takes by default.
    assert len({c.hints["blocks_per_sm"] for c in streamed}) > 3 and {c.hints["ring_slots"] for c in streamed} == {2, 3}
    assert all(c.hints["joint_reduction"] and c.plan.schedule.elems_per_thread >= 16 for c in streamed)
    assert {c.hints["variant"] for c in candidates(spec_of(schedule=spec.schedule.model_copy(update={"variant": "fragment"})))} == {
        "fragment"
    }
    pinned = spec_of(schedule=spec.schedule.model_copy(update={"block_m": 2}))
    assert {c.hints["block_m"] for c in candidates(pinned)} == {2}
    # No candidate leaves threads idle or over the register budget.
    assert all(8 <= c.plan.schedule.elems_per_thread <= 64 for c in found)


def test_committed_tuning_file_is_valid_and_used_by_the_examples():
    """tuning.json is what `fusegen tune` wrote on the H200; every committed example must find its winners.
    A spec a user adds to specs/ needs none (tuning takes a GPU): it builds with the planner's schedule."""
    path = ROOT / "tuning.json"
    if not path.exists():
        pytest.fail("tuning.json is missing: run `fusegen tune specs/` on the GPU")
    tuning = Tuning.load(path)
    for name in EXAMPLE_KERNELS:
        spec, _ = load_spec(ROOT / "specs" / f"{name}.toml")
        assert tuning.routes(spec), f"{name} has no tuning entry for {tuning.gpu}"


def test_a_candidate_replaces_the_planner_choice_only_when_clearly_faster():
    from fusegen.tune import MARGIN, winners

    spec = spec_of()
    planner, close, fast, wrong = candidates(spec)[:4]
    at = [b.measured_at for b in BUCKETS]
    planner.median_us = dict(zip(at, (10.0, 20.0, 100.0)))
    close.median_us = dict(zip(at, (10.0 * (1 - MARGIN / 2), 30.0, 200.0)))  # inside the margin: noise
    fast.median_us = dict(zip(at, (11.0, 15.0, 90.0)))
    wrong.median_us = dict(zip(at, (1.0, 1.0, 1.0)))
    wrong.rejected = "wrong results: 3 of 4096 fp8 codes differ"
    result = winners(spec, [planner, close, fast, wrong], Measured(date="2026-11-29", commit="abc1234"))
    chosen = [b.hints.model_dump() for b in result.buckets]
    assert chosen == [planner.hints, fast.hints, fast.hints]
    assert [b.planner_median_us for b in result.buckets] == [10.0, 20.0, 100.0]
    assert all(b.candidates == 3 for b in result.buckets)


def test_routes_with_one_schedule_share_a_program_compiled_once(tmp_path):
    """Buckets 1 and 3 with one winner, bucket 2 with another: two programs, not three, and the
    launcher compiles each once whichever route asks first (for sm_90a; no GPU needed)."""
    import logging

    from fusegen.checking import build_variant

    logging.getLogger("tilelang").setLevel(logging.WARNING)
    spec = spec_of(hidden=1024)
    tuned = routes_for(table_for(spec, hints(128), hints(256), hints(128)), spec, GPU)
    p = plan(spec, "x.toml", tuned)
    assert p.program_of_route == (0, 1, 0)
    text = render(p)["kernel.py"]
    assert "ROUTES = ((1, 64, program_0), (65, 1024, program_1), (1025, None, program_0),)" in text
    assert "def program_2" not in text
    launcher = build_variant(spec, tmp_path, tuned).launcher
    assert launcher.compiled(1) is launcher.compiled(5000)
    assert launcher.compilations == 1
    assert launcher.compiled(100) is not launcher.compiled(1)
    assert launcher.compilations == 2


def test_a_tuned_hint_the_planner_cannot_follow_names_the_tuning_file():
    from fusegen.errors import ChainError

    spec = spec_of()
    table = table_for(spec, hints(32, block_m=4), hints(128), hints(128))  # 4 rows × 4096 over 32 threads: 512 values each
    with pytest.raises(ChainError) as caught:
        plan(spec, "x.toml", routes_for(table, spec, GPU))
    assert "tuning winners" in caught.value.message and "fusegen tune" in caught.value.message


def test_an_odd_gpu_name_on_the_command_line_is_a_usage_error(tmp_path):
    """--gpu names the column of the tuning file whose text reaches kernel.py: held to the file's own rule."""
    for command in (
        ["build", str(ROOT / "specs" / "rms_norm.toml"), "--out", str(tmp_path / "out")],
        ["plan", str(ROOT / "specs" / "rms_norm.toml")],
    ):
        result = subprocess.run(
            [sys.executable, "-m", "fusegen", *command, "--gpu", 'H200"""\nimport os'], capture_output=True, text=True, cwd=ROOT
        )
        assert result.returncode == 2, result.stderr
        assert "--gpu" in result.stderr and "printable ASCII" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


ENVIRONMENT = {
    "gpu": "NVIDIA H200",
    "date": "2026-11-29T13:48:44+00:00",
    "commit": "3ece4af",
    "driver": "580.159.04",
    "torch": "2.11.0+cu130",
    "tilelang": "0.1.15",
}


@pytest.mark.parametrize(
    "changes, gpu_option, named",
    [
        ({"commit": '"""\nimport os'}, None, "FUSEGEN_COMMIT"),
        ({"gpu": "NVIDIA\nH200"}, None, "--gpu"),
        ({"gpu": "NVIDIA H200"}, "\x1b[2J", "--gpu"),
        ({"driver": "580; rm -rf"}, None, "driver"),
    ],
)
def test_tune_refuses_text_the_tuning_file_cannot_hold_before_tuning(monkeypatch, capsys, tmp_path, changes, gpu_option, named):
    """FUSEGEN_COMMIT and the GPU's name go into tuning.json and from there into kernel.py: tune checks
    them first, as a usage error (exit 2) naming where the value came from."""
    import fusegen.bench
    import fusegen.cli
    from fusegen.cli import main

    env = {**ENVIRONMENT, **changes}
    monkeypatch.setattr(fusegen.cli, "gpu_problem", lambda command: None)  # as on a Hopper machine
    monkeypatch.setenv("FUSEGEN_COMMIT", env["commit"])
    monkeypatch.setattr(fusegen.bench, "environment", lambda: env)
    tuning = tmp_path / "tuning.json"
    argv = ["tune", str(ROOT / "specs" / "rms_norm.toml"), "--tuning", str(tuning), "--out-dir", str(tmp_path / "results")]
    assert main(argv + (["--gpu", gpu_option] if gpu_option else [])) == 2
    err = capsys.readouterr().err
    assert named in err and len(err.splitlines()) == 2, err
    assert not tuning.exists()


@pytest.mark.parametrize(
    "where, says",
    [("missing/tuning.json", "missing is not a directory; tune writes the file there"), ("", "is a directory; it names the tuning file")],
    ids=["directory-missing", "a-directory"],
)
def test_tune_checks_it_can_write_the_tuning_file_before_tuning(monkeypatch, capsys, tmp_path, where, says):
    """tune writes the tuning file after its first spec's minutes of timing: a path it cannot write is a usage
    error before any of it, not a traceback then."""
    import fusegen.cli
    from fusegen.cli import main

    monkeypatch.setattr(fusegen.cli, "gpu_problem", lambda command: None)  # as on a Hopper machine
    named = str(tmp_path / where) if where else str(tmp_path)
    assert main(["tune", str(ROOT / "specs" / "rms_norm.toml"), "--tuning", named, "--out-dir", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err
    assert f"error: --tuning {named}: " in err and says in err and "Traceback" not in err, err


def test_tune_records_a_valid_environment():
    from fusegen.tune import recorded_environment

    assert recorded_environment(ENVIRONMENT, None) == ("NVIDIA H200", Measured(**{k: v for k, v in ENVIRONMENT.items() if k != "gpu"}))
    assert recorded_environment(ENVIRONMENT, "H200 SXM")[0] == "H200 SXM"


@pytest.mark.parametrize(
    "make, says",
    [
        (lambda p: p.write_text("[" * 100000), "too deeply"),
        (lambda p: p.write_text('{"problems": ' * 5000 + "{}" + "}" * 5000), "too deeply"),
        (lambda p: os.mkfifo(p), "not a regular file"),
        (lambda p: p.symlink_to("/dev/zero"), "not a regular file"),
        (lambda p: p.mkdir(), "not a regular file"),
        (lambda p: p.write_bytes(b" " * (MAX_TUNING_BYTES + 1)), "more than"),
        (lambda p: p.write_text('{"format": ' + "9" * 100001 + "}"), "not a readable JSON"),
    ],
    ids=["deep-array", "deep-object", "fifo", "dev-zero", "directory", "huge", "huge-integer"],
)
def test_a_tuning_file_that_cannot_be_one_is_refused_without_reading_it_all(tmp_path, make, says):
    """No traceback, no hang on a FIFO, no unbounded read of /dev/zero: a SpecError naming the file."""
    path = tmp_path / "tuning.json"
    make(path)
    with pytest.raises(SpecError, match=says) as caught:
        Tuning.load(path, GPU)
    assert str(path) in str(caught.value)


def test_quick_tune_times_the_planner_and_the_best_ranked_candidates_of_each_variant():
    from fusegen.tune import (
        QUICK_BOUNDS,
        QUICK_CANDIDATES,
        _full_sm,
        _register_rings,
        _scaled_threads,
        _tight_bounds,
        quick_candidates,
        rank_key,
        winners,
    )

    spec = spec_of(hidden=5120, dtype="bfloat16")
    found = candidates(spec)
    quick = quick_candidates(found, QUICK_CANDIDATES)
    assert quick[0] is found[0] and len(quick) == QUICK_CANDIDATES < len(found)
    assert {c.plan.schedule.variant for c in quick} == {"fragment", "stream"}
    # Next the planner's own schedule under its tightest launch bounds past two, tightest first.
    own = found[0].plan.schedule
    bounds = quick[1 : 1 + QUICK_BOUNDS]
    assert [c.plan.schedule.blocks_per_sm for c in bounds] == sorted((c.plan.schedule.blocks_per_sm for c in bounds), reverse=True)
    for c in bounds:
        s = c.plan.schedule
        assert s.blocks_per_sm > 2 and (s.threads, s.vector_bytes, s.prefetch, s.joint_reduction) == (
            own.threads,
            own.vector_bytes,
            own.prefetch,
            own.joint_reduction,
        )
    # The rest ranked by the planner's rules: no candidate left out ranks above the worst one taken of its
    # variant, past those quick always takes (the bounds, twice and half the threads, a full SM).
    scaled = [*_scaled_threads(found, Fraction(2)), *_scaled_threads(found, Fraction(1, 2))]
    fixed = [*_tight_bounds(found), *scaled, *_full_sm(found), *_register_rings(found)]
    for variant in ("fragment", "stream"):
        taken = [rank_key(c.plan) for c in quick[1:] if c not in fixed and c.plan.schedule.variant == variant]
        left = [rank_key(c.plan) for c in found[1:] if c not in quick and c.plan.schedule.variant == variant]
        assert max(taken) <= min(left)
    # With a fake timer the winner is the fastest of the quick set, and only where it beats the planner.
    for i, c in enumerate(quick):
        c.median_us = {bucket.measured_at: 100.0 - i for bucket in BUCKETS}
    chosen = winners(spec, quick, Measured()).buckets
    assert {b.median_us for b in chosen} == {100.0 - QUICK_CANDIDATES + 1} and {b.planner_median_us for b in chosen} == {100.0}
    assert chosen[0].hints.model_dump() == WinnerHints.model_validate(quick[-1].hints).model_dump()


def test_quick_also_times_streams_holding_the_next_row_in_registers_at_the_most_blocks():
    """bf16 LayerNorm → e5m2 2880 (the sweep's slowest row): the register ring at the planner's 128 threads won
    at six blocks an SM and tied at four (perf/probe94). Tune's candidates carry the ring only on streams,
    whose hints plan the same schedule again; quick takes the two with the most blocks an SM."""
    from fusegen.tune import QUICK_REGISTER_RINGS, quick_candidates

    spec = KernelSpec.model_validate(
        {
            "name": "k",
            "dtype": "bfloat16",
            "hidden": 2880,
            "op": [{"kind": "layernorm"}, {"kind": "quant_fp8", "fp8": "e5m2"}],
            "outputs": {"y": False},
        }
    )
    found = candidates(spec)
    rings = [c for c in found if c.plan.schedule.ring_in_registers]
    assert rings and all(c.plan.schedule.variant == "stream" and c.hints["ring"] == "registers" for c in rings)
    assert all("ring" not in c.hints for c in found if not c.plan.schedule.ring_in_registers)
    for c in rings:
        again = plan(spec.model_copy(update={"schedule": spec.schedule.model_copy(update=c.hints)}), "<tune>")
        assert replace(again.schedule, reasons=()) == replace(c.plan.schedule, reasons=())
    own_threads = found[0].plan.schedule.threads
    most = sorted({c.plan.schedule.blocks_per_sm for c in rings if c.plan.schedule.threads == own_threads}, reverse=True)
    taken = [c.plan.schedule for c in quick_candidates(found) if c.plan.schedule.ring_in_registers]
    assert {(s.threads, s.blocks_per_sm) for s in taken} >= {(own_threads, b) for b in most[:QUICK_REGISTER_RINGS]}
    assert len(most) >= QUICK_REGISTER_RINGS and most[0] >= 6


def test_where_the_planner_streams_quick_also_times_the_fragment_program_it_replaced():
    """bf16 RMSNorm → RoPE → FP8 7168 without Y: schedule.wide_stream streams it. The fragment program
    variant = "fragment" plans is the second candidate and among quick's eight."""
    from fusegen.tune import quick_candidates

    spec = spec_of(hidden=7168, dtype="bfloat16")
    found = candidates(spec)
    assert found[0].plan.schedule.variant == "stream" and found[1].replaced_by_rule
    fragment = plan(spec.model_copy(update={"schedule": spec.schedule.model_copy(update={"variant": "fragment"})}), "<tune>")
    assert found[1].plan.schedule == fragment.schedule
    assert found[1] in quick_candidates(found, 8)
    assert not any(c.replaced_by_rule for c in candidates(spec_of(hidden=5120, dtype="bfloat16")))


@pytest.mark.parametrize("hidden", [768, 1000])
def test_where_the_planner_puts_short_rows_together_quick_also_times_one_row_a_block(hidden):
    """bf16 768 (1.5 KB rows): schedule.short_rows takes two a block. The one-row program the hint
    block_m = 1 plans is the second candidate and among quick's eight, and rank_key puts the rule's two rows
    a block before one and four among the rest (perf/probe19: one and four rows lost to two). bf16 1000:
    the rule counts the row's 2000 bytes, not the 2 KB it is padded to, and so does rank_key."""
    from fusegen.tune import quick_candidates, rank_key

    spec = spec_of(hidden=hidden, dtype="bfloat16")
    found = candidates(spec)
    assert found[0].plan.schedule.block_m == 2 and found[1].replaced_by_rule
    one_row = plan(spec.model_copy(update={"schedule": spec.schedule.model_copy(update={"block_m": 1})}), "<tune>")
    assert found[1].plan.schedule == one_row.schedule
    assert found[1] in quick_candidates(found, 8)
    best = min(found[2:], key=lambda c: rank_key(c.plan))
    assert best.plan.schedule.block_m == 2 and {c.plan.schedule.block_m for c in found} == {1, 2, 4}


def test_quick_ranks_one_row_a_block_first_where_a_short_row_gathers_16_values_a_thread():
    """fp16 cache RoPE 768 (24 values a thread on one warp): two rows a block ran 13 % slower (perf/probe19)."""
    from fusegen.tune import rank_key

    cache_rope = {"kind": "rope", "rope_dim": 64, "source": "cache", "max_position": 4096}
    spec = KernelSpec.model_validate({"name": "k", "dtype": "float16", "hidden": 768, "op": [{"kind": "rmsnorm"}, cache_rope]})
    found = candidates(spec)
    fragments = [c for c in found if c.plan.schedule.variant == "fragment"]
    assert min(fragments, key=lambda c: rank_key(c.plan)).plan.schedule.block_m == 1
    assert found[0].plan.schedule.block_m == 1


Q_B_SPEC = ROOT / "specs" / "models" / "deepseek-v3-mla-q-b.toml"


def test_tune_times_rows_split_into_parts_of_a_kilobyte_or_more_on_the_planners_threads_and_twice_them():
    spec, _ = load_spec(Q_B_SPEC)
    split = [c for c in candidates(spec) if "row_split" in c.hints]
    assert all(c.plan.routes[-1].schedule.row_split == c.hints["row_split"] and len(c.plan.routes) == 1 for c in split)
    # Parts of whole 192-column heads, at least 512 bf16 columns, each on the threads the planner gives such a part
    # and on twice them.
    shapes = sorted((c.hints["row_split"], c.hints["threads"]) for c in split)
    assert shapes == [(2, 512), (2, 1024), (4, 256), (4, 512), (8, 128), (8, 256), (16, 64), (16, 128), (32, 32), (32, 64)]


def test_quick_times_the_planners_few_token_parts_on_twice_the_threads_where_a_thread_holds_many_vectors():
    # fp32 3200 in groups of 16 (perf/probe102's 1.20 × row): 10 parts of 320 columns at 8 tokens, 32 threads of five
    # 8-byte vectors each; q_b's 32 parts hold three 16-byte vectors a thread, and quick leaves their double out.
    from fusegen.tune import QUICK_SPLIT_SERIAL_VECTORS, quick_candidates

    grouped = KernelSpec.model_validate(
        {"name": "k", "dtype": "float32", "hidden": 3200, "op": [{"kind": "quant_fp8", "group_size": 16, "scale_layout": "column"}]}
    )
    q_b, _ = load_spec(Q_B_SPEC)
    for spec, taken in ((grouped, True), (q_b, False)):
        found = candidates(spec)
        few = found[0].plan.route_for(8).schedule
        assert (few.elems_per_thread // few.vector_elems >= QUICK_SPLIT_SERIAL_VECTORS) == taken
        doubled = [c for c in found if (c.plan.schedule.row_split, c.plan.schedule.threads) == (few.row_split, 2 * few.threads)]
        assert doubled and any(c in quick_candidates(found) for c in doubled) == taken


def test_the_planners_winner_is_recorded_as_each_of_its_routes_in_the_bucket():
    """The planner's own plan of q_b splits rows in 1 KB parts up to 8 tokens and 3 KB parts to 64: where it wins
    the first bucket (timed at 8), the tuning file must keep both routes, or the tuned build would run the 1 KB
    parts up to 64 tokens, where they lost by up to 19 % (perf/probe100)."""
    from fusegen.tune import render_report, winners

    spec, _ = load_spec(Q_B_SPEC)
    planner = candidates(spec)[0]
    planner.median_us = {bucket.measured_at: 1.0 for bucket in BUCKETS}
    won = winners(spec, [planner], Measured())
    assert [(b.first_tokens, b.last_tokens, b.measured_at, b.hints.row_split) for b in won.buckets] == [
        (1, 8, 8, 32),
        (9, 64, 8, 16),
        (65, 1024, 256, "auto"),
        (1025, None, 16384, "auto"),
    ]
    report = render_report(
        [{"kernel": spec.name, "candidates": [{"rejected": None}], "winners": won.model_dump(mode="json")}],
        {"gpu": GPU, "date": "2026-12-01", "commit": "abc1234"},
    )
    assert "| 1–8 (at 8) | fragment (rows in 32 parts) 32 × 1, True," in report
    assert "| 9–64 (the planner's route; its bucket timed at 8) | fragment (rows in 16 parts) 64 × 1, True," in report
    tuned = plan(spec, "q_b.toml", routes_for(with_winners(TuningTable(), spec, GPU, won), spec, GPU))
    assert [(r.first_tokens, r.last_tokens, r.schedule.row_split, r.schedule.threads) for r in tuned.routes] == [
        (r.first_tokens, r.last_tokens, r.schedule.row_split, r.schedule.threads) for r in planner.plan.routes
    ]
    # A candidate that beats the planner at 8 tokens serves the whole bucket.
    faster = next(c for c in candidates(spec)[1:] if c.plan.routes[0].schedule.row_split == 4)
    faster.median_us = {bucket.measured_at: 0.5 for bucket in BUCKETS}
    first = winners(spec, [planner, faster], Measured()).buckets[0]
    assert (first.first_tokens, first.last_tokens, first.hints.row_split) == (1, 64, 4)


def test_a_candidate_whose_plan_routes_part_of_its_bucket_elsewhere_still_serves_the_whole_bucket():
    """A candidate's own plan may route 1–256 tokens one way and more another; where it wins only the middle
    bucket (timed at 256), its timed route serves all of 65–1024: clipped to its own 65–256, counts 257–1024 had no
    winner and tune failed (a random CI draw)."""
    from fusegen.tune import _concrete, winners

    spec = KernelSpec.model_validate(
        {
            "name": "split_candidate",
            "dtype": "bfloat16",
            "hidden": 2048,
            "op": [
                {"kind": "add_residual"},
                {"kind": "rmsnorm", "weight": True, "eps": 0.01},
                {"kind": "quant_fp8", "group_size": 8, "fp8": "e5m2", "scale": "ue8m0", "scale_layout": "column"},
            ],
        }
    )
    middle = BUCKETS[1]
    found = candidates(spec)
    split = next(c for c in found[1:] if (c.plan.route_for(middle.measured_at).last_tokens or middle.last_tokens) < middle.last_tokens)
    for candidate in found:
        candidate.median_us = {bucket.measured_at: 10.0 for bucket in BUCKETS}
    found[0].median_us = {bucket.measured_at: 1.0 for bucket in BUCKETS}
    split.median_us[middle.measured_at] = 0.5
    won = winners(spec, found, Measured())
    served = [(b.first_tokens, b.last_tokens, b.median_us) for b in won.buckets if b.measured_at == middle.measured_at]
    assert served == [(middle.first_tokens, middle.last_tokens, 0.5)]
    tuned = plan(spec, "k.toml", routes_for(with_winners(TuningTable(), spec, GPU, won), spec, GPU))
    timed = _concrete(split.plan.route_for(middle.measured_at).schedule)
    for tokens in (middle.first_tokens, middle.measured_at, middle.last_tokens):
        assert _concrete(tuned.route_for(tokens).schedule) == timed


def planner_won_everywhere(spec: KernelSpec) -> tuple:
    """The planner's own plan of `spec`, and the plan a tuning file in which its schedule won every bucket gives."""
    from fusegen.tune import Candidate, _concrete, winners

    own = plan(spec, "k.toml")
    planner = Candidate(_concrete(own.schedule), own)
    planner.median_us = {bucket.measured_at: 1.0 for bucket in BUCKETS}
    table = with_winners(TuningTable(), spec, GPU, winners(spec, [planner], Measured()))
    return own, plan(spec, "k.toml", routes_for(table, spec, GPU))


def programs(p) -> list[tuple]:
    """What a build compiles of a plan, range for range: schedules (all but the reasons), stages and buffers."""
    return [(r.first_tokens, r.last_tokens, replace(r.schedule, reasons=()), r.stages, r.scratch) for r in p.routes]


@pytest.mark.parametrize("name", planner_routed_cases())
def test_a_tuning_the_planner_wins_everywhere_builds_the_planners_own_programs(name):
    """Whatever ranges the planner's routes take (few-token splits, two or four warps a row, one row a block
    below 1025 tokens), a tuning file in which its schedule won every bucket gives a build the same programs,
    range for range: schedules, stages and buffers alike."""
    own, tuned = planner_won_everywhere(KernelSpec.model_validate(spec_for(name)))
    assert all(route.origin.startswith("tuning on") for route in tuned.routes)
    assert programs(tuned) == programs(own)


RANDOM_PLANNER_WINS = 300


def test_the_planners_own_programs_survive_its_winning_on_random_specs():
    """The same on random unhinted draws (tests/test_random_specs.py's), which reach layouts and sizings the GPU
    cases reach once or never: 16-bit 256-column FP8 rows sharing warps, whose layout their own hints once refused
    (one case had it), and rows the planner unstages for a second block, whose tuned build once kept the staged
    row's register estimate (none had it)."""
    from test_random_specs import draw_valid, seeded_draws

    rng, replay = seeded_draws()
    for _ in range(RANDOM_PLANNER_WINS):
        drawn = {key: value for key, value in draw_valid(rng).items() if key not in ("schedule", "tokens")}
        own, tuned = planner_won_everywhere(KernelSpec.model_validate(drawn))
        assert programs(tuned) == programs(own), f"{drawn} {replay}"


@pytest.mark.parametrize("ratio", [Fraction(2), Fraction(1, 2)])
def test_quick_also_times_the_planners_schedule_on_twice_and_half_its_threads(ratio):
    """Twice: few tokens are latency-bound, and the committed full tunes' 8- and 256-token buckets went to 256
    threads × 16 values where the planner took 128 × 32 (with that candidate quick found 77 % of the full
    winners, 65 % without: docs/bench/tune/quick-check.md). Half: full tunes of the sweep's two 2880-column
    quant rows quick left under 0.93 were won on 64 threads where the planner takes 128 (perf/probe100)."""
    from fusegen.tune import QUICK_CANDIDATES, _scaled_threads, quick_candidates

    found = candidates(spec_of())
    own = found[0].plan.schedule
    (scaled,) = _scaled_threads(found, ratio)
    assert scaled in quick_candidates(found, QUICK_CANDIDATES)
    s = scaled.plan.schedule
    assert (own.variant, own.threads, s.threads, s.elems_per_thread) == ("fragment", 128, 128 * ratio, own.elems_per_thread / ratio)
    assert (s.variant, s.vector_elems, s.prefetch, s.joint_reduction) == (own.variant, own.vector_elems, own.prefetch, own.joint_reduction)


def test_quick_also_times_a_full_sm_of_24_warps_reading_side_inputs_where_staging_would_not_fit():
    """fp32 LayerNorm → RoPE → FP8 5248 (held out, perf/probe61): the planner's 128 threads keep ~3 blocks with
    weight and bias staged; a full tune's winner, 1.42× faster, was 128 × 6 blocks reading them where used. Quick
    times the 24-warp candidates: staged where the register estimate fits the bound's registers, else not."""
    from fusegen.schedule import fragment_registers, registers_allotted
    from fusegen.tune import QUICK_FULL_SM, QUICK_FULL_SM_THREADS, _full_sm, quick_candidates

    ln_rope_quant = [{"kind": "layernorm"}, {"kind": "rope", "rope_dim": 128}, {"kind": "quant_fp8", "group_size": 64, "scale": "ue8m0"}]
    wide = KernelSpec.model_validate({"name": "k", "dtype": "float32", "hidden": 5248, "op": ln_rope_quant, "outputs": {"y": False}})
    narrow = spec_of(hidden=4096, dtype="bfloat16")
    for spec, staged_fit in ((wide, False), (narrow, True)):
        found = candidates(spec)
        full = _full_sm(found)
        assert 1 <= len(full) <= QUICK_FULL_SM and all(c in quick_candidates(found, 8) for c in full)
        side_inputs = staged_inputs(found[0].plan.stages)
        for c in full:
            s = c.plan.schedule
            assert (s.variant, s.block_m, s.row_split, s.threads * s.blocks_per_sm) == ("fragment", 1, 1, QUICK_FULL_SM_THREADS)
            staged = replace(s, prefetch=True)
            assert s.prefetch == (fragment_registers(staged, side_inputs) <= registers_allotted(s.blocks_per_sm, s.threads))
        assert any(c.plan.schedule.prefetch for c in full) == staged_fit
    # That winner is now the planner's own program (schedule.fp8_row_full_sm), which quick always times.
    assert any((c.plan.schedule.threads, c.plan.schedule.blocks_per_sm) == (128, 6) for c in quick_candidates(candidates(wide), 8))
