"""`fusegen tune --gpus N` on the CPU: the specs split over one process per GPU, each process pinned to its
device, and the shards' winners and reports merged into one tuning file and one report — a shard that fails
keeps what it saved and makes the run fail, naming it."""

from __future__ import annotations

import json
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pytest
from test_tuning import GPU, hints, spec_of, winners_of

from fusegen import cli, tune
from fusegen.errors import SpecError
from fusegen.tuning import TuningTable, load_table, merged_tables, problem_key, save_table, with_winners

ENV = {"gpu": GPU, "date": "2026-12-01T00:00:00+00:00", "commit": "abc1234"}


def test_shards_split_the_specs_into_disjoint_sets_in_their_order():
    specs = [spec_of(name=f"k{i}", hidden=512 * (i + 1)) for i in range(7)]
    shards = [tune.shard_of(specs, (i, 3)) for i in range(3)]
    assert [[s.name for s in shard] for shard in shards] == [["k0", "k3", "k6"], ["k1", "k4"], ["k2", "k5"]]


def test_gpus_all_takes_every_visible_gpu_and_more_than_visible_is_refused():
    assert tune.gpu_count("all", 4) == 4 and tune.gpu_count("2", 4) == 2
    with pytest.raises(SpecError, match="asks for 3 GPUs; 2 are visible") as caught:
        tune.gpu_count("3", 2)
    assert "--gpus" in str(caught.value)


@pytest.mark.parametrize("bad", ["0", "-1", "two"])
def test_gpus_must_be_a_count_or_all(bad, capsys):
    with pytest.raises(SystemExit) as caught:
        cli.main(["tune", "specs", "--gpus", bad])
    assert caught.value.code == 2 and "--gpus" in capsys.readouterr().err


def test_each_shard_is_pinned_to_its_device_as_cuda_visible_devices_names_it(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3, 5,7")
    assert tune.visible_devices(2) == ["3", "5"]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert tune.visible_devices(3) == ["0", "1", "2"]


def test_a_shard_runs_the_same_tune_on_its_share(tmp_path):
    args = Namespace(paths=["specs", "perf/sweep"], hidden=[4096], dtype=["bfloat16"], quick=8)
    command = tune.shard_command(args, 1, 4, 3, GPU, tmp_path)
    assert command[:6] == [sys.executable, "-m", "fusegen", "tune", "specs", "perf/sweep"]
    text = " ".join(command)
    for part in ("--hidden 4096", "--dtype bfloat16", "--quick 8", "--jobs 3", f"--gpu {GPU}", "--shard 1/4"):
        assert part in text
    assert command[command.index("--tuning") + 1] == str(tmp_path / "tuning.json")
    # The internal option parses back to the shard it names, and only as I/N with I < N.
    assert cli.parser().parse_args(["tune", "specs", "--shard", "1/4"]).shard == (1, 4)
    with pytest.raises(SystemExit):
        cli.parser().parse_args(["tune", "specs", "--shard", "4/4"])


def test_merged_tables_lay_each_shard_over_the_file_gpu_by_gpu():
    a, b = spec_of(hidden=4096), spec_of(hidden=7168)
    base = with_winners(
        with_winners(TuningTable(), a, "Other GPU", winners_of(hints(64), hints(64), hints(64))),
        a,
        GPU,
        winners_of(hints(128), hints(128), hints(128)),
    )
    part = with_winners(TuningTable(), a, GPU, winners_of(hints(256), hints(256), hints(256)))
    part = with_winners(part, b, GPU, winners_of(hints(512), hints(512), hints(512)))
    merged = merged_tables(base, part)
    tuned_a = merged.problems[problem_key(a)].gpus
    assert set(tuned_a) == {"Other GPU", GPU} and tuned_a[GPU].buckets[0].hints.threads == 256
    assert merged.problems[problem_key(b)].gpus[GPU].buckets[0].hints.threads == 512


def shard_output(tmp_path: Path, name: str, spec, threads: int) -> Path:
    """What a shard process leaves in its directory: its tuning file and its report."""
    where = tmp_path / f"made-{name}"
    (where / "out").mkdir(parents=True)
    winners = winners_of(hints(threads), hints(threads), hints(threads))
    save_table(where / "tuning.json", with_winners(TuningTable(), spec, GPU, winners))
    entry = {"kernel": spec.name, "problem": "p", "winners": winners.model_dump(mode="json"), "candidates": [{"rejected": None}]}
    (where / "out" / "tune.json").write_text(json.dumps({"environment": ENV, "problems": [entry]}))
    return where


def test_shards_are_merged_and_a_failed_shard_fails_the_run_keeping_what_it_saved(tmp_path, monkeypatch, capsys):
    specs = [spec_of(name="k0", hidden=2048), spec_of(name="k1", hidden=4096), spec_of(name="k2", hidden=7168)]
    made = {0: (shard_output(tmp_path, "0", specs[2], 256), 0), 1: (shard_output(tmp_path, "1", specs[1], 128), 3)}
    launched = []

    def fake_shard(args, shard, count, jobs, gpu, workdir):
        source, code = made[shard]
        launched.append((shard, count, jobs))
        copy = f"import shutil, sys; shutil.copytree({str(source)!r}, {str(workdir)!r}, dirs_exist_ok=True); sys.exit({code})"
        return [sys.executable, "-c", copy]

    monkeypatch.setattr(tune, "shard_command", fake_shard)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")
    seen_env = []
    real_popen = subprocess.Popen
    monkeypatch.setattr(tune.subprocess, "Popen", lambda *a, **k: seen_env.append(k["env"]["CUDA_VISIBLE_DEVICES"]) or real_popen(*a, **k))
    tuning = tmp_path / "tuning.json"
    args = Namespace(jobs=4, tuning=str(tuning), out_dir=str(tmp_path / "report"))
    status = tune.tune_on_devices(args, [s.name for s in specs], 2, GPU, ENV)
    assert status == 1 and launched == [(0, 2, 2), (1, 2, 2)] and seen_env == ["4", "6"]
    assert "shard 2 (GPU 6) exited 3" in capsys.readouterr().err
    table = load_table(tuning)
    assert {problem_key(specs[1]), problem_key(specs[2])} == set(table.problems)
    report = json.loads((tmp_path / "report" / "tune.json").read_text())["problems"]
    assert [entry["kernel"] for entry in report] == ["k1", "k2"]  # the specs' order, not the shards'
    assert "| k1 |" in (tmp_path / "report" / "tune.md").read_text()
