"""fusegen's pytest plugin (the `pytest11` entry point, so pytest loads it wherever fusegen is installed): the
`gpu` mark the generated tests carry is registered in a user's project as in this one, where `pytest -m gpu`
selects them and `--strict-markers` accepts them."""

from __future__ import annotations


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (Hopper); skipped elsewhere with the reason")
