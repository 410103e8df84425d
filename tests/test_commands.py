"""What a newcomer meets first, on a machine without a GPU: the setup installs what every command
imports, bench and tune run without the test tools, and say plainly that they need a GPU."""

from __future__ import annotations

import argparse
import ast
import importlib.metadata
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import torch

from fusegen import cli
from fusegen.cli import NO_GPU_EXIT, gpu_problem, parser, spec_json_schema
from fusegen.ops import REGISTRY
from fusegen.spec import load_spec

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def requirement_name(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower()


def third_party_imports() -> dict[str, set[str]]:
    """Top-level module name -> the fusegen files that import it, for every module that is neither the
    standard library's nor fusegen's own."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "fusegen").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in ("__future__", "fusegen"):
                    found.setdefault(top, set()).add(path.relative_to(ROOT).as_posix())
    return found


def test_pyproject_declares_every_third_party_import():
    declared = {requirement_name(r) for r in PYPROJECT["project"]["dependencies"]}
    for requirements in PYPROJECT["project"]["optional-dependencies"].values():
        declared |= {requirement_name(r) for r in requirements}
    distributions = importlib.metadata.packages_distributions()
    imports = third_party_imports()
    assert {"torch", "tilelang", "pydantic", "matplotlib", "tqdm", "pytest"} <= imports.keys()
    undeclared = {
        module: sorted(files)
        for module, files in imports.items()
        if not {d.lower() for d in distributions.get(module, [module])} & declared
    }
    assert not undeclared, f"imported by fusegen but in no dependency list of pyproject.toml: {undeclared}"


def test_setup_installs_every_extra():
    """The README's setup line is the one that makes every command work: setup.sh installs all extras."""
    installed = re.search(r'-e "\.\[([a-z,]+)\]"', (ROOT / "scripts" / "setup.sh").read_text())
    assert installed, "scripts/setup.sh no longer installs fusegen with its extras"
    assert set(installed.group(1).split(",")) == set(PYPROJECT["project"]["optional-dependencies"])


BLOCK_PYTEST = """
import importlib.abc, sys

class NoPytest(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("pytest", "_pytest"):
            raise ImportError(f"{name} is not installed (blocked by the test)")

sys.meta_path.insert(0, NoPytest())
"""


def test_bench_and_tune_import_without_pytest():
    code = BLOCK_PYTEST + (
        "import fusegen.bench, fusegen.tune\nfrom fusegen.checking import import_plan, random_inputs, run_and_compare\nprint('imported')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "imported" in result.stdout, result.stderr


def fusegen(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fusegen", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("command", ["bench", "tune"])
def test_gpu_commands_say_they_need_a_gpu(command, tmp_path):
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible here; this checks the message a machine without one gets")
    tuning = tmp_path / "tuning.json"
    if command == "bench":  # bench reads the file it is given, tune writes it
        tuning.write_text("{}")
    result = fusegen(command, "specs/", "--out-dir", str(tmp_path / "results"), "--tuning", str(tuning))
    assert result.returncode == NO_GPU_EXIT
    assert "Traceback" not in result.stderr
    assert f"error: fusegen {command} needs a CUDA GPU (Hopper, sm_90a); none is visible (torch {torch.__version__}" in result.stderr
    written = [path.name for path in tmp_path.iterdir()]
    assert written == (["tuning.json"] if command == "bench" else []), "nothing is written before the GPU is found missing"


def test_the_gpu_mark_is_registered_in_any_project(tmp_path):
    """Generated tests carry `pytest.mark.gpu`; in a user's project (no fusegen pyproject.toml) pytest must
    know the mark, or `--strict-markers` fails their collection and every run warns of a typo."""
    result = subprocess.run([sys.executable, "-m", "pytest", "--markers"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "@pytest.mark.gpu: needs a CUDA GPU (Hopper)" in result.stdout, result.stdout[-2000:]


def test_bench_where_no_tuning_file_is_times_untuned(tmp_path, monkeypatch, capsys):
    """Like build, bench run where there is no tuning.json times the planner's schedules: only a file named
    with --tuning must exist (it asked for the GPU, not for a file the user never named)."""
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible here; this checks how far bench gets on a machine without one")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["bench", str(ROOT / "specs" / "rms_norm.toml")]) == NO_GPU_EXIT
    assert "--tuning" not in capsys.readouterr().err


@pytest.mark.parametrize(
    "arguments, says",
    [
        (["bench", "nowhere.toml"], "error: nowhere.toml: no such file or directory"),
        (["tune", "nowhere.toml"], "error: nowhere.toml: no such file or directory"),
        (["bench", "specs/", "--tokens", "0"], "--tokens: must be a whole number of at least 1"),
        (["bench", "specs/", "--tuning", "tunnig.json"], "error: --tuning tunnig.json: no such file (a file holding {} plans untuned)"),
        (["tune", "specs/", "--jobs", "-1"], "--jobs: must be a whole number of at least 1"),
        (["bench", "specs/", "--out-dir", "README.md"], "error: --out-dir README.md: is a file; it must be a directory"),
        (["tune", "specs/", "--out-dir", "README.md/results"], "error: --out-dir README.md/results: is under README.md, a file"),
        (["bench", "specs/", "--record", "nowhere.md"], "error: --record nowhere.md: cannot read it (No such file or directory)"),
        (["bench", "specs/", "--record", "README.md"], "error: --record README.md: no section for bench-results; put `<!-- fusegen"),
    ],
    ids=[
        "bench-missing-spec",
        "tune-missing-spec",
        "bench-zero-tokens",
        "bench-missing-tuning",
        "tune-negative-jobs",
        "bench-out-dir-a-file",
        "tune-out-dir-under-a-file",
        "bench-record-missing",
        "bench-record-without-section",
    ],
)
def test_gpu_commands_report_usage_errors_before_asking_for_a_gpu(arguments, says):
    """A wrong path or argument is the user's to fix wherever they run: it is named (exit 2) before
    bench or tune says it needs a GPU."""
    result = fusegen(*arguments)
    assert result.returncode == 2, result.stderr
    assert says in result.stderr
    assert "needs a" not in result.stderr and "Traceback" not in result.stderr


def test_gpu_commands_name_a_gpu_that_is_not_hopper(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 0))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA A100-SXM4-80GB")
    assert gpu_problem("bench") == "fusegen bench needs a Hopper GPU (sm_90a); found NVIDIA A100-SXM4-80GB (sm_80)"
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    assert gpu_problem("tune") is None


def test_version_names_fusegen_tilelang_and_torch():
    from fusegen import __version__

    result = fusegen("--version")
    assert result.returncode == 0, result.stderr
    expected = f"fusegen {__version__} (tilelang {importlib.metadata.version('tilelang')}, torch {torch.__version__})"
    assert result.stdout.strip() == expected


def every_parser(root: argparse.ArgumentParser):
    """`root` and every subcommand's parser below it, with the command words that reach it."""
    pending = [((), root)]
    while pending:
        words, current = pending.pop()
        yield words, current
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                pending += [((*words, name), sub) for name, sub in action.choices.items()]


def test_every_command_argument_and_option_has_help():
    missing = []
    for words, command in every_parser(parser()):
        for action in command._actions:
            if isinstance(action, argparse._SubParsersAction):
                described = {choice.dest for choice in action._choices_actions if choice.help}
                missing += [f"fusegen {' '.join((*words, name))}" for name in action.choices if name not in described]
            elif not action.help:
                missing.append(f"fusegen {' '.join(words)} {'/'.join(action.option_strings) or action.dest}")
    assert not missing, f"no help text: {missing}"


def schema_properties(schema: dict):
    """(where, property schema) for every key of a spec the schema describes."""
    for model, node in [("spec", schema), *schema["$defs"].items()]:
        for key, prop in node["properties"].items():
            yield f"{model}.{key}", prop


def test_schema_describes_every_key_with_its_allowed_values():
    result = fusegen("schema")
    assert result.returncode == 0, result.stderr
    schema = json.loads(result.stdout)
    undescribed = [where for where, prop in schema_properties(schema) if not prop.get("description")]
    assert not undescribed, f"keys without a description: {undescribed}"
    props = dict(schema_properties(schema))
    assert props["spec.dtype"]["enum"] == ["float16", "bfloat16", "float32"]
    assert (props["spec.hidden"]["minimum"], props["spec.hidden"]["maximum"]) == (16, 65536)
    assert props["RopeSpec.style"]["enum"] == ["neox", "gptj"]
    assert set(schema["properties"]["op"]["items"]["discriminator"]["mapping"]) == set(REGISTRY)
    assert schema["additionalProperties"] is False, "a misspelt key must be flagged by the editor too"


def test_committed_specs_validate_against_the_schema_and_bad_ones_do_not():
    jsonschema = pytest.importorskip("jsonschema")  # in the test extra
    schema = spec_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for path in sorted((ROOT / "specs").glob("*.toml")):
        errors = [error.message for error in validator.iter_errors(tomllib.loads(path.read_text()))]
        assert not errors, f"{path.name}: {errors}"
    spec = tomllib.loads((ROOT / "specs" / "rms_norm_rope_fused.toml").read_text())
    for key, bad in [("dtype", "fp16"), ("hidden", 8), ("hiden", 4096)]:
        assert not validator.is_valid({**spec, key: bad}), key
    assert not validator.is_valid({**spec, "op": [{"kind": "rope", "rope_dim": 64, "style": "llama"}]})


def test_a_schema_comment_first_line_leaves_the_spec_as_it_was(tmp_path):
    """Taplo / Even Better TOML read `#:schema <file>` on the first line; to TOML it is a comment."""
    original = ROOT / "specs" / "rms_norm.toml"
    with_comment = tmp_path / "rms_norm.toml"
    with_comment.write_text("#:schema ../fusegen-spec.schema.json\n" + original.read_text())
    assert load_spec(with_comment)[0] == load_spec(original)[0]


def test_a_reader_that_stops_early_ends_no_traceback():
    """`fusegen schema | head`: the pipe closes before fusegen has written; it stops quietly."""
    process = subprocess.Popen([sys.executable, "-m", "fusegen", "schema"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    process.stdout.close()
    _, err = process.communicate(timeout=60)
    assert process.returncode == 141, err
    assert b"Traceback" not in err and b"BrokenPipeError" not in err, err


@pytest.mark.parametrize("arguments", [[], ["--help"], ["/nonexistent/report.json", "out.md"]])
def test_the_verification_writer_answers_bad_arguments_with_one_line(arguments, tmp_path):
    """`python -m fusegen.verification`, run after a GPU session: a usage line or the unreadable file, exit 2."""
    done = subprocess.run(
        [sys.executable, "-m", "fusegen.verification", *arguments], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / "out.md").exists()


@pytest.mark.parametrize("command, absent", [("bench", "matplotlib"), ("tune", "tqdm")])
def test_bench_and_tune_name_a_missing_extra_before_any_work(command, absent, monkeypatch, capsys, tmp_path):
    """Installed without the bench extra, bench and tune say which module and how to get it (exit 2), where
    the import had failed as a traceback — matplotlib's only once bench had timed everything."""
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *rest: None if name == absent else find_spec(name, *rest))
    assert cli.main([command, str(ROOT / "specs" / "rms_norm.toml"), "--out-dir", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err
    assert f'error: fusegen {command} needs {absent}, not installed here: pip install "fusegen[bench]"' in err, err


@pytest.mark.parametrize("command", ["bench", "tune"])
def test_a_spec_retargeted_past_its_rules_is_refused_before_any_work(command, tmp_path, capsys):
    """--hidden and --dtype re-target every spec; a re-targeted spec is held to a spec file's rules. A group of
    128 over 1000 columns had been planned, built and timed (plan() does not repeat the file's checks)."""
    spec = tmp_path / "grouped.toml"
    spec.write_text(
        'name = "grouped"\ndtype = "bfloat16"\nhidden = 4096\n\n[[op]]\nkind = "rmsnorm"\n\n[[op]]\nkind = "quant_fp8"\ngroup_size = 128\n'
    )
    argv = [command, str(spec), "--hidden", "4096", "1000", "--out-dir", str(tmp_path / "results")]
    assert cli.main(argv + (["--tuning", str(tmp_path / "tuning.json")] if command == "tune" else [])) == 2
    err = capsys.readouterr().err
    assert (
        f"error: {spec}: op[1].group_size: must be 'token' or a multiple of 8 that divides hidden = 1000, got 128 "
        "(re-targeted by --hidden/--dtype to hidden = 1000, dtype = bfloat16)"
    ) in err, err
    assert "needs a" not in err and len(err.splitlines()) == 2, err
