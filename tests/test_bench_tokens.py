"""Which token counts `fusegen bench` times each kernel at (CPU): the sweep's per-width count beside the
counts asked for, and a spec that pins its count timed only there."""

from __future__ import annotations

from types import SimpleNamespace

from fusegen.bench import sweep_tokens, token_counts


def test_the_sweep_count_moves_64_mi_elements_and_never_fewer_than_16384_tokens():
    assert [sweep_tokens(h) for h in (512, 1536, 4096, 16384)] == [131072, 43690, 16384, 16384]


def test_each_kernel_gets_its_own_sweep_count_after_the_counts_asked_for():
    assert token_counts(SimpleNamespace(hidden=1024, tokens=None), (8, 256), sweep=True) == [8, 256, 65536]
    assert token_counts(SimpleNamespace(hidden=8192, tokens=None), (8, 16384), sweep=True) == [8, 16384]
    assert token_counts(SimpleNamespace(hidden=1024, tokens=None), (8, 256), sweep=False) == [8, 256]
    assert token_counts(SimpleNamespace(hidden=1024, tokens=37), (8, 37), sweep=True) == [37]
