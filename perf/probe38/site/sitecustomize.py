"""On PYTHONPATH ahead of the bundle for perf/probe38's call, so that every process of it — the timing
script and the worker processes that compile for it — widens bf16 from words in the `_new` kernels."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
try:
    import bf16_words

    bf16_words.register()
except ImportError:  # a process without TileLang's FFI compiles nothing
    pass
