"""Another probe's script as a module. Every probe names its script build.py, so one is loaded by path under
a name of its own (`<probe>_<script>`), not imported by name."""

from __future__ import annotations

import importlib.util
from pathlib import Path

PERF = Path(__file__).resolve().parents[1]


def probe_script(probe: str, script: str = "build"):
    """perf/<probe>/<script>.py, loaded."""
    loaded = importlib.util.spec_from_file_location(f"{probe}_{script}", PERF / probe / f"{script}.py")
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    return module
