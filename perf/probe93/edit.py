"""probe93 (session 40): the register-ring form of perf/probe90 in the generator's own TileLang, by editing
one generated stream program (perf/probe92's ln2880_t128_bB_r2: bf16 LayerNorm → e5m2 2880 on 128 threads)
before any generator change: `_reg` keeps the next row's x in a fragment of registers (loaded before this
row's reductions, moved into `row` at the next step) in place of the shared-memory ring and its barrier;
`_regw` also widens weight and bias to fp32 once a block (the stream stages them in bf16 and widens them
every row); `_w` the shared ring with fp32 weight and bias. Each edited package keeps its plan.json and
reference, so scripts/gpu_hunt.py checks it and perf/proto/probe_time.py times it.

    .venv/bin/python perf/probe93/edit.py perf/probe92/kernels/time/kernels perf/probe93/kernels
    python3 scripts/gpu_hunt.py check perf/probe93/kernels/check && python3 perf/proto/probe_time.py perf/probe93/kernels/time/kernels OUT.json 2"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

RING = """            x_ring = T.alloc_shared((2, columns), "bfloat16")
            for v in T.serial(chunks):
                ring_column = (v * threads + T.get_thread_binding()) * vector
                if ring_column < HIDDEN:
                    T.ptx_cp_async(T.access_ptr(x_ring[0, ring_column], "w", vector), T.access_ptr(X[block, ring_column], "r", vector), vector)
            T.ptx_commit_group()
            for step in T.serial(T.ceildiv(m - block, _grid)):
                token = block + step * _grid
                slot = step % 2
                if token + 1 * _grid < m:
                    for v in T.serial(chunks):
                        ring_column = (v * threads + T.get_thread_binding()) * vector
                        if ring_column < HIDDEN:
                            T.ptx_cp_async(T.access_ptr(x_ring[(step + 1) % 2, ring_column], "w", vector), T.access_ptr(X[token + 1 * _grid, ring_column], "r", vector), vector)
                    T.ptx_commit_group()
                else:
                    T.ptx_commit_group()
                T.ptx_wait_group(1)
                for j in T.Parallel(columns):
                    row[j] = T.if_then_else(j < HIDDEN, T.cast(x_ring[slot, j], "float32"), 0.0)
"""
REGISTERS = """            x_next = T.alloc_fragment((columns,), "bfloat16")
            T.annotate_layout({x_next: T.Fragment((columns,), forward_thread_fn=row_thread, forward_index_fn=row_index)})
            for j in T.Parallel(columns):
                x_next[j] = T.if_then_else(j < HIDDEN, X[block, j], T.cast(0, "bfloat16"))
            for step in T.serial(T.ceildiv(m - block, _grid)):
                token = block + step * _grid
                for j in T.Parallel(columns):
                    row[j] = T.cast(x_next[j], "float32")
                if token + _grid < m:
                    for j in T.Parallel(columns):
                        x_next[j] = T.if_then_else(j < HIDDEN, X[token + _grid, j], T.cast(0, "bfloat16"))
"""


def widened(source: str) -> str:
    """Weight and bias staged as fp32, widened once a block."""
    for name in ("weight", "bias"):
        param = name.capitalize()
        source = source.replace(
            f'{name}_staged = T.alloc_fragment((columns,), "bfloat16")', f'{name}_staged = T.alloc_fragment((columns,), "float32")'
        )
        source = source.replace(
            f'{name}_staged[j] = T.if_then_else(j < HIDDEN, {param}[j], T.cast(0, "bfloat16"))',
            f'{name}_staged[j] = T.if_then_else(j < HIDDEN, T.cast({param}[j], "float32"), 0.0)',
        )
    return source


def main(built: Path, out: Path) -> None:
    timed, checked = out / "time" / "kernels", out / "check" / "kernels"
    timed.mkdir(parents=True)
    checked.mkdir(parents=True)
    for blocks in (4, 5):
        base = built / f"ln2880_t128_b{blocks}_r2"
        source = (base / "kernel.py").read_text()
        assert RING in source, base
        for suffix, edit in (
            ("reg", lambda s: s.replace(RING, REGISTERS)),
            ("regw", lambda s: widened(s.replace(RING, REGISTERS))),
            ("w", widened),
        ):
            name = f"{base.name}_{suffix}"
            target = timed / name
            shutil.copytree(base, target)
            (target / "kernel.py").write_text(edit(source))
            for stale in target.glob("kernel.cu"):
                stale.unlink()  # the CUDA of the unedited program
            shutil.copytree(target, checked / name)
        shutil.copytree(base, timed / base.name)
    shutil.copytree(built / "issue_ln_e5m2_token_bf16_2880", timed / "issue_ln_e5m2_token_bf16_2880")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
