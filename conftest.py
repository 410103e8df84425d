"""Records GPU test outcomes for the verification report when FUSEGEN_GPU_REPORT names a file."""

from __future__ import annotations

import json
import os

from fusegen import pytest_plugin

_outcomes: list[dict] = []


def pytest_configure(config):
    # A source tree on PYTHONPATH (the GPU machine's runs) has no installed entry point to load the plugin.
    if not config.pluginmanager.has_plugin("fusegen"):
        config.pluginmanager.register(pytest_plugin, "fusegen")


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
