"""`fusegen bench` times the kernel and its baselines in turn (bench.time_graphs_together): a drift of the GPU
within a run moves every implementation of a round alike. The replays need a GPU; what is checked here is the
order they run in, which samples each implementation gets, and that one which cannot be captured is reported
while the others are timed."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from fusegen import bench


def test_graphs_timed_together_take_turns_and_each_keeps_its_own_samples(monkeypatch):
    replayed = []
    # µs per call of each replay, in the order they run: a b c, b c a, c a b, a b c.
    per_replay = iter([1.0, 2.0, 3.0, 20.0, 30.0, 10.0, 300.0, 100.0, 200.0, 1000.0, 2000.0, 3000.0])

    def replay_us(graph, calls):
        assert calls == 32
        replayed.append(graph)
        return next(per_replay)

    monkeypatch.setattr(bench, "replay_us", replay_us)
    samples = bench.time_graphs_together({"a": "graph a", "b": "graph b", "c": "graph c"}, calls=32, rounds=4)
    assert replayed == ["graph " + n for n in "abcbcacababc"]  # each leads once every three rounds
    assert samples == {"a": [1.0, 10.0, 100.0, 1000.0], "b": [2.0, 20.0, 200.0, 2000.0], "c": [3.0, 30.0, 300.0, 3000.0]}
    assert bench.time_graphs_together({}, calls=32, rounds=4) == {}  # every implementation failed to capture


def test_bench_kernel_times_what_it_captured_in_turn_and_reports_what_it_could_not(monkeypatch, capsys):
    kernel, reference = object(), object()
    module = SimpleNamespace(kernel=kernel, reference=reference)
    plan = SimpleNamespace(name="k", ledger=SimpleNamespace(fused_bytes=lambda tokens: tokens * 1000), route_for=lambda tokens: None)
    monkeypatch.setattr(bench, "input_sets", lambda module, moved, tokens, l2: [("inputs",)])
    monkeypatch.setattr(bench, "timed_schedule", lambda route: "the planner's program")
    monkeypatch.setattr(bench, "host_per_call", lambda fn, sets: 7.0)

    def captured_graph(fn, sets, calls):
        if fn is reference:
            raise RuntimeError("cannot capture this one\nsecond line")
        return "graph of the kernel"

    together = []

    def time_together(graphs, calls, rounds):
        together.append((dict(graphs), calls, rounds))
        return {"fusegen": [2.0, 1.0, 3.0]}

    monkeypatch.setattr(bench, "captured_graph", captured_graph)
    monkeypatch.setattr(bench, "time_graphs_together", time_together)
    progress = []
    (row,) = bench.bench_kernel(module, plan, 8, 50 << 20, progress.append, ("eager",))
    assert progress == ["k m=8 fusegen", "k m=8 eager"]
    assert "k m=8 eager: not timed (RuntimeError: cannot capture this one)" in capsys.readouterr().out
    assert together == [({"fusegen": "graph of the kernel"}, bench.GRAPH_CALLS, bench.GRAPH_ROUNDS)]
    assert (row.impl, row.median_us, row.host_us_per_call, row.schedule) == ("fusegen", 2.0, 7.0, "the planner's program")
    assert row.tb_per_s == pytest.approx(8000 / 2e-6 / 1e12)


def test_bench_kernel_with_nothing_captured_reports_it_and_gives_no_rows(monkeypatch, capsys):
    module = SimpleNamespace(kernel=object(), reference=object())
    plan = SimpleNamespace(name="k", ledger=SimpleNamespace(fused_bytes=lambda tokens: tokens), route_for=lambda tokens: None)
    monkeypatch.setattr(bench, "input_sets", lambda module, moved, tokens, l2: [("inputs",)])
    monkeypatch.setattr(bench, "host_per_call", lambda fn, sets: 7.0)
    monkeypatch.setattr(bench, "replay_us", lambda graph, calls: pytest.fail("nothing was captured to replay"))

    def captured_graph(fn, sets, calls):
        raise RuntimeError("no GPU kernel image")

    monkeypatch.setattr(bench, "captured_graph", captured_graph)
    assert bench.bench_kernel(module, plan, 8, 50 << 20, lambda line: None, ("eager",)) == []
    printed = capsys.readouterr().out
    assert "k m=8 fusegen: not timed (RuntimeError: no GPU kernel image)" in printed
    assert "k m=8 eager: not timed (RuntimeError: no GPU kernel image)" in printed
