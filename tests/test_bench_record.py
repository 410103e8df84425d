"""`fusegen record`: saved bench results written into their marked sections of a markdown file, the rest
of the file left as it was."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fusegen.bench_report import RECORD_END, RecordError, Row, record, record_begin

ENVIRONMENT = {"date": "2026-11-30T00:00:00+00:00", "gpu": "NVIDIA H200", "commit": "abc1234"}


def save_results(directory, kernel: str, fused_us: float, compile_us: float, ceiling: float) -> None:
    ledger = 268_435_456
    rows = [
        Row(kernel, 16384, "fusegen", fused_us, fused_us, fused_us, ledger, ledger / fused_us / 1e6, None, "fragment, 128 threads"),
        Row(kernel, 16384, "compile", compile_us, compile_us, compile_us, ledger, ledger / compile_us / 1e6, None),
    ]
    directory.mkdir(parents=True)
    results = {"environment": ENVIRONMENT, "copy_tb_per_s": ceiling, "rows": [asdict(r) for r in rows]}
    (directory / "bench.json").write_text(json.dumps(results))


def sections(*dirs: str) -> str:
    return "".join(f"## {d}\n\n{record_begin(d)}\nstale table\n{RECORD_END}\n\nprose after {d}\n\n" for d in dirs)


def test_record_fills_sections_and_is_idempotent(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = random.Random()
    runs = {d: (rng.uniform(50, 100), rng.uniform(100, 200), rng.uniform(4.0, 4.3)) for d in ("bench/targets", "bench/examples")}
    for d, (fused, compiled, ceiling) in runs.items():
        save_results(tmp_path / d, f"kernel_{d.split('/')[1]}", fused, compiled, ceiling)
    benchmarks = tmp_path / "BENCHMARKS.md"
    original = "# Benchmarks\n\nintro\n\n" + sections(*runs)
    benchmarks.write_text(original)

    record(benchmarks, [Path(d) for d in runs])
    text = benchmarks.read_text()
    assert "stale table" not in text
    for d, (fused, compiled, ceiling) in runs.items():
        name = f"kernel_{d.split('/')[1]}"
        section = text[text.index(record_begin(d)) : text.index(RECORD_END, text.index(record_begin(d)))]
        assert f"![fusegen against the copy ceiling and torch.compile]({d}/bench.png)" in section
        assert f"copy ceiling: {ceiling:.2f} TB/s" in section
        assert f"| {name} | 16384 | {fused:.1f} |" in section
        assert f"| {compiled / fused:.2f} |" in section
        assert "commit abc1234" in section
        assert f"prose after {d}" in text

    # Everything outside the sections is as it was.
    def outside(t):
        return [part.split(RECORD_END)[-1] for part in t.split("<!-- fusegen bench results:")]

    assert outside(text) == outside(original)
    record(benchmarks, [Path(d) for d in runs])
    assert benchmarks.read_text() == text


def test_missing_section_and_missing_results_are_clear_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    save_results(tmp_path / "bench" / "targets", "k", 60.0, 120.0, 4.2)
    benchmarks = tmp_path / "BENCHMARKS.md"
    benchmarks.write_text("# Benchmarks\n" + sections("bench/examples"))
    with pytest.raises(RecordError, match=r"no section for bench/targets; put `<!-- fusegen bench results: bench/targets -->`"):
        record(benchmarks, [Path("bench/targets")])
    benchmarks.write_text("# Benchmarks\n" + sections("bench/targets", "bench/examples"))
    with pytest.raises(RecordError, match=r"bench/examples/bench.json: no bench results there"):
        record(benchmarks, [Path("bench/targets"), Path("bench/examples")])
    # Nothing is written unless every section could be: no half-updated file.
    assert "stale table" in benchmarks.read_text()
    benchmarks.write_bytes(b"\xff# Benchmarks\n")
    with pytest.raises(RecordError, match=r"BENCHMARKS.md: is not UTF-8 text \(byte 0xff at offset 0\)"):
        record(benchmarks, [Path("bench/targets")])
    assert benchmarks.read_bytes() == b"\xff# Benchmarks\n"


def test_command_line_reports_an_error_without_a_traceback(tmp_path):
    benchmarks = tmp_path / "BENCHMARKS.md"
    benchmarks.write_text("# Benchmarks\n")
    result = subprocess.run(
        [sys.executable, "-m", "fusegen", "record", str(benchmarks), str(tmp_path / "absent")], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr


def valid_results() -> dict:
    row = asdict(Row("k", 8, "fusegen", 10.0, 9.0, 11.0, 1024, 0.1, 2.5, "fragment, 128 threads"))
    rows = [row, dict(row, impl="compile", host_us_per_call=None)]
    costs = [{"kernel": "k", "tokens": 8, "kernel_us": 14.0, "kernel_out_us": 11.5, "program_us": 10.0, "add_us": 9.4}]
    return {"environment": dict(ENVIRONMENT, driver=None), "copy_tb_per_s": 4.2, "rows": rows, "host_costs": costs}


def recorded_section(tmp_path, results: dict) -> str:
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "bench.json").write_text(json.dumps(results))
    benchmarks = tmp_path / "BENCHMARKS.md"
    benchmarks.write_text(f"{record_begin((tmp_path / 'results').as_posix())}\nstale table\n{RECORD_END}\n")
    record(benchmarks, [tmp_path / "results"])
    return benchmarks.read_text()


def test_host_costs_are_recorded_with_their_ratios_to_torch_add(tmp_path):
    text = recorded_section(tmp_path, valid_results())
    assert "| kernel | tokens | kernel() µs | kernel(out=) µs | program µs | torch.add µs | kernel() / add | kernel(out=) / add |" in text
    assert "| k | 8 | 14.0 | 11.5 | 10.0 | 9.4 | 1.49 | 1.22 |" in text


def test_a_bench_json_from_before_host_costs_is_recorded_without_their_table(tmp_path):
    results = valid_results()
    del results["host_costs"]
    text = recorded_section(tmp_path, results)
    assert "| k | 8 | 10.0 |" in text
    assert "torch.add" not in text


def paths_in(value, prefix=()):
    """Every place in a JSON document: the keys of its objects and the indices of its arrays."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield prefix + (key,)
        yield from paths_in(child, prefix + (key,))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_malformed_bench_json_is_a_record_error_and_writes_nothing(tmp_path, data):
    """A bench.json with a key dropped or a value of another type: record succeeds or raises RecordError,
    never another exception, and on error BENCHMARKS.md is as it was."""
    document = valid_results()
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        path = data.draw(st.sampled_from([()] + list(paths_in(document))), label="where")
        if not path:
            document = data.draw(JSON_VALUES, label="whole document")
            continue
        parent = document
        for key in path[:-1]:
            parent = parent[key]
        if data.draw(st.booleans(), label="drop"):
            del parent[path[-1]]
        else:
            parent[path[-1]] = data.draw(JSON_VALUES, label="value")
    results = tmp_path / "results"
    results.mkdir(exist_ok=True)
    (results / "bench.json").write_text(json.dumps(document))
    benchmarks = tmp_path / "BENCHMARKS.md"
    original = f"# Benchmarks\n{record_begin(results.as_posix())}\nstale table\n{RECORD_END}\n"
    benchmarks.write_text(original)
    try:
        record(benchmarks, [results])
    except RecordError as exc:
        assert str(exc).startswith(f"{results / 'bench.json'}: ")
        assert benchmarks.read_text() == original


@pytest.mark.parametrize(
    "content, message",
    [
        ("not json", "bench.json: not JSON ("),
        ("[" * 100_000, "bench.json: not JSON ("),
        (json.dumps({"environment": {}, "copy_tb_per_s": 4.2}), "bench.json: rows: required key is missing;"),
        (json.dumps(dict(valid_results(), copy_tb_per_s=0)), "bench.json: copy_tb_per_s: input should be greater than 0, got 0;"),
        (json.dumps(dict(valid_results(), rows=[5])), "bench.json: rows[0]: input should be an object, got 5;"),
        (json.dumps(dict(valid_results(), rows=[{"kernel": "k"}])), "bench.json: rows[0].tokens: required key is missing;"),
        (
            json.dumps(dict(valid_results(), host_costs=[dict(valid_results()["host_costs"][0], add_us=0)])),
            "bench.json: host_costs[0].add_us: input should be greater than 0, got 0;",
        ),
        (
            json.dumps(dict(valid_results(), host_costs=[{"kernel": "k", "tokens": 8}])),
            "bench.json: host_costs[0].kernel_us: required key is missing;",
        ),
    ],
)
def test_malformed_bench_json_names_the_file_and_key(tmp_path, content, message):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "bench.json").write_text(content)
    benchmarks = tmp_path / "BENCHMARKS.md"
    benchmarks.write_text(f"{record_begin((tmp_path / 'results').as_posix())}\n{RECORD_END}\n")
    with pytest.raises(RecordError) as caught:
        record(benchmarks, [tmp_path / "results"])
    assert str(caught.value).startswith(f"{tmp_path / 'results' / 'bench.json'}: ")
    assert message in str(caught.value)
