"""Records GPU test outcomes for the verification report when FUSEGEN_GPU_REPORT names a file, and hands each GPU
test's cached memory back to the card when it ends."""

from __future__ import annotations

import json
import os
import sys

import pytest

from fusegen import pytest_plugin

_outcomes: list[dict] = []


def pytest_configure(config):
    # A source tree on PYTHONPATH (the GPU machine's runs) has no installed entry point to load the plugin.
    if not config.pluginmanager.has_plugin("fusegen"):
        config.pluginmanager.register(pytest_plugin, "fusegen")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    yield
    # Several pytest workers share one card (scripts/gpu_verify.sh), and each worker's caching allocator keeps what
    # its largest test reserved: on an 80 GiB H100, workers holding 11-15 GiB between tests left a 16384-token
    # model test, or a cuBLAS handle, without memory (sessions 52 and 53). Released, a worker holds only what
    # the test it runs needs.
    torch = sys.modules.get("torch")
    if "gpu" in item.keywords and torch is not None and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def pytest_runtest_logreport(report):
    if "gpu" not in report.keywords:
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        _outcomes.append({"test": report.nodeid, "outcome": report.outcome, "seconds": round(report.duration, 3)})


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("FUSEGEN_GPU_REPORT")
    if not path or hasattr(session.config, "workerinput"):
        return
    from fusegen.bench import environment

    with open(path, "w") as handle:
        json.dump({"environment": environment(), "exit_status": int(exitstatus), "tests": _outcomes}, handle, indent=1)
