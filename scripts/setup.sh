#!/usr/bin/env bash
# Creates .venv with fusegen and what every command needs: the test tools (pytest) and bench's plot and
# progress bar (matplotlib, tqdm; fusegen tune uses tqdm too). torch is pinned to 2.13.0 here: on this project's CPU
# machines that wheel is a local CPU build (seconds); an unpinned torch would pull a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -c "import torch" 2>/dev/null || .venv/bin/python -m pip install -q torch==2.13.0
.venv/bin/python -m pip install -q -e ".[test,bench]"
