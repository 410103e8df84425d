"""Spec files of a variant probe: each spec of a sample written once per [schedule] table, named
pNN_CHAIN_DTYPE_HIDDEN_SUFFIX, for perf/probe*/build.sh scripts that time a chain's program variants side by
side (perf/proto/probe_build.sh builds them; call_probe.sh times them)."""

from __future__ import annotations

from pathlib import Path

CACHE = 'source = "cache"\nmax_position = 32768\n'
RMS = '[[op]]\nkind = "rmsnorm"\n'
HEAD_RMS = '[[op]]\nkind = "rmsnorm"\nover = "head"\n'


def cache_rope(dim: int, span: str, style: str) -> str:
    return f'[[op]]\nkind = "rope"\nrope_dim = {dim}\nspan = "{span}"\nstyle = "{style}"\n{CACHE}'


def write(out: Path, probe: int, chains: dict[str, tuple[str, str]], sample) -> None:
    """`chains`: name → (top-level lines such as head_dim, the [[op]] tables and any [outputs] table);
    `sample`: (chain, dtype, hidden, {suffix: schedule lines, `;` between}) — one spec file per suffix."""
    out.mkdir()
    for chain, dtype, hidden, variants in sample:
        head, body = chains[chain]
        body, _, outputs = body.partition("[outputs]")
        outputs = "[outputs]" + outputs if outputs else ""
        for suffix, schedule in variants.items():
            name = f"p{probe}_{chain}_{dtype.replace('float', 'f')}_{hidden}_{suffix}"
            table = "\n[schedule]\n" + schedule.replace(";", "\n") + "\n" if schedule else ""
            (out / f"{name}.toml").write_text(f'name = "{name}"\ndtype = "{dtype}"\nhidden = {hidden}\n{head}\n{body}{outputs}{table}')
