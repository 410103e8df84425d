"""Which token counts `fusegen bench` times each kernel at (CPU): the sweep's per-width count beside the
counts asked for, and a spec that pins its count timed only there."""

from __future__ import annotations

from types import SimpleNamespace

from fusegen.bench import not_timed, sweep_tokens, timed_schedule, token_counts
from fusegen.emit import schedule_summary
from fusegen.plan import plan
from fusegen.spec import KernelSpec
from fusegen.tuning import TunedRoute


def test_the_sweep_count_moves_64_mi_elements_and_never_fewer_than_16384_tokens():
    assert [sweep_tokens(h) for h in (512, 1536, 4096, 16384)] == [131072, 43690, 16384, 16384]


def test_each_kernel_gets_its_own_sweep_count_after_the_counts_asked_for():
    assert token_counts(SimpleNamespace(hidden=1024, tokens=None), (8, 256), sweep=True) == [8, 256, 65536]
    assert token_counts(SimpleNamespace(hidden=8192, tokens=None), (8, 16384), sweep=True) == [8, 16384]
    assert token_counts(SimpleNamespace(hidden=1024, tokens=None), (8, 256), sweep=False) == [8, 256]
    assert token_counts(SimpleNamespace(hidden=1024, tokens=37), (8, 37), sweep=True) == [37]


def test_a_spec_pinned_to_a_count_not_asked_for_is_named_with_what_would_time_it():
    """perf/probe103's sweep of a fresh draw timed 58 of its 64 specs and said nothing of the six that pin a count."""
    pinned = SimpleNamespace(name="pinned_k", hidden=1024, tokens=4096)
    assert not_timed(pinned, (8,), sweep=True) == (
        "pinned_k: not timed: its spec pins tokens = 4096, which is not among the counts asked for; add 4096 to --tokens"
    )
    assert not_timed(pinned, (8, 4096), sweep=False) is None
    assert not_timed(SimpleNamespace(name="k", hidden=1024, tokens=None), (), sweep=True) is None


def test_a_tuned_row_names_its_tuning_run_and_the_planners_own_says_nothing_more():
    """A bench table read later must tell the planner's own schedules (an untuned sweep) from measured winners."""
    spec = KernelSpec.model_validate({"name": "k", "dtype": "bfloat16", "hidden": 4096, "op": [{"kind": "rmsnorm"}]})
    planned = plan(spec, "k.toml").route_for(8)
    assert timed_schedule(planned) == schedule_summary(planned)
    origin = "tuning on NVIDIA H200 (2026-11-30, commit a8c114b)"
    tuned = plan(spec, "k.toml", (TunedRoute(1, None, {"variant": "fragment", "threads": 256}, origin),)).route_for(8)
    assert timed_schedule(tuned) == f"{schedule_summary(tuned)}; from {origin}"
    assert schedule_summary(tuned).startswith("fragment, 256 threads")
