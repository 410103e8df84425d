"""A small deterministic sample of scripts/malformed_corpus.py through the real CLI: no malformed or
hostile input may end in a traceback, a hang, or a change outside what the command may write."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "malformed_corpus.py"
SEED = 12
SAMPLE = 24  # about 20 s of refusals on one core: the whole corpus is the integrator's run


def load_corpus():
    spec = importlib.util.spec_from_file_location("malformed_corpus", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


CORPUS = load_corpus()
# One of every category first, so each entry point is reached, then more of the cheap ones; none compiles.
_cheap = [case for case in CORPUS.corpus(SEED) if not case.compiles]
_rng = random.Random(SEED)
_firsts = {case.category: case for case in reversed(_cheap)}
_rest = [case for case in _cheap if all(case is not first for first in _firsts.values())]
CASES = list(_firsts.values()) + _rng.sample(_rest, max(0, SAMPLE - len(_firsts)))


@pytest.mark.parametrize("case", CASES, ids=[f"{c.category}: {ascii(c.label)[1:-1][:60]}" for c in CASES])
def test_malformed_input_is_refused_or_accepted_cleanly(case):
    done = CORPUS.run_case(case)
    assert done.outcome not in CORPUS.FATAL, f"{done.outcome}: {done.detail}\n" + "\n".join(done.lines)
