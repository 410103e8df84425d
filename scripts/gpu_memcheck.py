"""One small run of every generated kernel, for `compute-sanitizer --tool memcheck`.

Each kernel runs at 8 tokens (the seed's small M) against its reference; the sanitizer reports any
out-of-bounds or misaligned access. Prints one line per kernel."""
import importlib
import sys
from pathlib import Path

from fusegen import testing

root = Path(__file__).resolve().parent.parent
for kernel_dir in sorted((root / "generated").glob("*/kernel.py")):
    name = kernel_dir.parent.name
    for tokens in (8, 3):
        testing.run_and_compare(importlib.import_module(f"generated.{name}"), tokens)
    print(f"memcheck {name}: ran at 8 and 3 tokens, matched the reference", flush=True)
sys.exit(0)
