"""File and directory names reach the terminal escaped: a name holding a terminal escape sequence or a line
break can neither recolour the terminal nor fake a second message line (CPU)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fusegen import cli
from fusegen.bench_report import RECORD_END, RecordError, record, record_begin

RED = "\x1b[31mred.toml"
FAKE_LINE = "gen\nerror: all good"
SPEC = 'name = "red"\ndtype = "float16"\nhidden = 256\n\n[[op]]\nkind = "rmsnorm"\n'


def assert_escaped(text: str, *raw: str) -> None:
    assert "\x1b" not in text
    assert not any(line.startswith("error: all good") for line in text.splitlines()), text
    for name in raw:
        assert ascii(name)[1:-1] in text, f"{name!r} is not named, escaped, in:\n{text}"


def test_build_report_and_plan_escape_paths(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path(RED).write_text(SPEC)
    assert cli.main(["build", RED, "--out", FAKE_LINE, "--jobs", "1"]) == 0
    assert_escaped(capsys.readouterr().out, FAKE_LINE)
    assert cli.main(["plan", RED]) == 0
    assert_escaped(capsys.readouterr().out, RED)


def test_the_notes_of_build_and_plan_escape_the_spec_path(tmp_path, monkeypatch, capsys):
    # Y repeating residual_out is pointed out naming the spec's file.
    monkeypatch.chdir(tmp_path)
    Path(RED).write_text(SPEC.replace('kind = "rmsnorm"', 'kind = "add_residual"\n\n[[op]]\nkind = "quant_fp8"\ngroup_size = 128'))
    assert cli.main(["build", RED, "--out", "out", "--jobs", "1"]) == 0
    built = capsys.readouterr().out
    assert "note: Y repeats residual_out" in built
    assert_escaped(built, RED)
    assert cli.main(["plan", RED]) == 0
    described = capsys.readouterr().out
    assert "Y repeats residual_out" in described
    assert_escaped(described, RED)


def test_spec_error_in_a_directory_with_a_line_break_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path(FAKE_LINE).mkdir()
    (Path(FAKE_LINE) / RED).write_text(SPEC.replace("256", "15"))
    assert cli.main(["build", FAKE_LINE, "--out", "out"]) == 2
    errors = capsys.readouterr().err
    assert_escaped(errors, FAKE_LINE, RED)
    assert len(errors.splitlines()) == 2  # the error and "nothing written"


def test_record_messages_escape_paths(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    benchmarks = Path("\x1b[31mBENCH.md")
    results = Path(FAKE_LINE)
    results.mkdir()
    (results / "bench.json").write_text(json.dumps({"environment": {}, "copy_tb_per_s": 4.0, "rows": []}))
    benchmarks.write_text("# Benchmarks\n")
    with pytest.raises(RecordError) as caught:
        record(benchmarks, [results])
    assert_escaped(str(caught.value), FAKE_LINE)
    benchmarks.write_text(f"{record_begin(results.as_posix())}\n{RECORD_END}\n")
    assert cli.main(["record", str(benchmarks), str(results)]) == 0
    assert_escaped(capsys.readouterr().out, str(benchmarks))
