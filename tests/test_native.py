"""fusegen.native's build: where it cannot be had, kernels launch from Python and a warning says why."""

from __future__ import annotations

import pytest
import torch

from fusegen import native


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """An empty cache and no recorded failure; available() is called unwrapped (it caches per process)."""
    monkeypatch.setenv("FUSEGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(native, "_failure", None)
    return native.available.__wrapped__


def test_without_a_compiler_kernels_launch_from_python_and_a_warning_says_why(fresh, monkeypatch):
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    with pytest.warns(UserWarning, match=r"C\+\+ launch path is unavailable \(no C\+\+ compiler '/nonexistent/c\+\+' \(set CXX\)\)"):
        assert fresh() is False
    assert "no C++ compiler" in native.unavailable()


def test_fusegen_no_compile_forbids_building_it(fresh, monkeypatch):
    monkeypatch.setenv("FUSEGEN_NO_COMPILE", "1")
    with pytest.warns(UserWarning, match="FUSEGEN_NO_COMPILE forbids building it"):
        assert fresh() is False
    assert "is not built in" in native.unavailable()


def test_a_compiler_error_is_reported_not_raised(fresh, monkeypatch, tmp_path):
    broken = tmp_path / "broken.cpp"
    broken.write_text("this is not C++\n")
    monkeypatch.setattr(native, "SOURCE", broken)
    with pytest.warns(UserWarning, match="failed"):
        assert fresh() is False
    assert not list((tmp_path / "cache").rglob("*.so")), "a failed build left a library behind"


def test_each_source_torch_and_compiler_gets_its_own_build(monkeypatch, tmp_path):
    monkeypatch.setenv("FUSEGEN_CACHE_DIR", str(tmp_path))
    path = native._library_path()
    assert path.is_relative_to(tmp_path / "native")
    monkeypatch.setattr(torch, "__version__", torch.__version__ + "+other")
    assert native._library_path() != path
    monkeypatch.undo()
    monkeypatch.setenv("FUSEGEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CXX", "clang++")
    assert native._library_path() != path


def test_without_python_headers_kernels_launch_from_python_and_a_warning_says_why(fresh, monkeypatch, tmp_path):
    paths = {**native.sysconfig.get_paths(), "include": str(tmp_path / "no-headers")}
    monkeypatch.setattr(native.sysconfig, "get_paths", lambda: paths)
    with pytest.warns(UserWarning, match=r"no Python headers in .*no-headers \(install this Python's development package\)"):
        assert fresh() is False
    assert not list((tmp_path / "cache").rglob("*.so")), "a failed build left a library behind"
