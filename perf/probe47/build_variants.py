"""probe47's hand-made programs of the sweep's two padded 2880-wide chains (bf16 LayerNorm → e5m2 per
token, fp16 RMSNorm → RoPE 64 → FP8 g32 ue8m0): the stream variant, which the planner refuses on a padded
row because TileLang's own partition of the ring's cp.async copy does not split 2880 columns, with the copy
written per thread (each thread fills its own 16-byte vectors of the ring, the padding zero-filled by a
predicated cp.async) — with the weight (and bias) staged as bf16/fp16 as the planner stages them, or as
float32 converted once per block instead of once per row.

    python perf/probe47/build_variants.py OUT_DIR      (compiles each for sm_90a here)
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import tilelang

import fusegen.schedule as schedule
from fusegen.emit import render
from fusegen.plan import plan
from fusegen.spec import parse_spec

SWEEP = Path(__file__).resolve().parents[1] / "sweep"
CHAINS = {"ln": "issue_ln_e5m2_token_bf16_2880", "rrq": "sweep_rms_rope_quant_f16_2880"}

RING_FILL = '''
    @T.macro
    def ring_fill(X, x_ring, token, slot):
        """Each thread copies its own vectors of row `token` into the ring's slot; the padding is zero-filled."""
        tx = T.get_thread_binding()
        for v in T.unroll(chunks):
            col = (v * threads + tx) * vector
            T.ptx_cp_async(
                T.tvm_access_ptr(T.type_annotation(DTYPE), x_ring.data, slot * columns + col, vector, 2),
                T.tvm_access_ptr(T.type_annotation(DTYPE), X.data, token * HIDDEN + T.if_then_else(col < HIDDEN, col, 0), vector, 1),
                vector,
                predicate=col < HIDDEN,
            )
        T.ptx_commit_group()

    @T.prim_func'''


def stream_text(spec_text: str, name: str, hints: str, float32_weights: bool) -> dict[str, str]:
    text = re.sub(r"^name = .*$", f'name = "{name}"', spec_text, flags=re.M) + '\n[schedule]\nvariant = "stream"\n' + hints
    fits = schedule._ring_copy_fits
    schedule._ring_copy_fits = lambda spec, sch: True
    try:
        files = render(plan(parse_spec(text, f"{name}.toml"), f"{name}.toml"))
    finally:
        schedule._ring_copy_fits = fits
    kernel = files["kernel.py"]
    dtype = re.search(r'X: T.Tensor\(\(m, HIDDEN\), "(\w+)"\)', kernel).group(1)
    kernel, copies = re.subn(r"T\.async_copy\(X\[(.+?), 0:HIDDEN\], x_ring\[(.+?), 0:HIDDEN\]\)", r"ring_fill(X, x_ring, \1, \2)", kernel)
    assert copies >= 2, copies  # the first row, and one per row ahead in the ring
    kernel = kernel.replace("\n    @T.prim_func", RING_FILL.replace("DTYPE", f'"{dtype}"'), 1)
    if float32_weights:
        for param in ("weight", "bias"):
            kernel = kernel.replace(
                f'{param}_staged = T.alloc_fragment((columns,), "{dtype}")', f'{param}_staged = T.alloc_fragment((columns,), "float32")'
            )
            kernel = kernel.replace(
                f'{param}_staged[j] = T.if_then_else(j < HIDDEN, {param.title()}[j], T.cast(0, "{dtype}"))',
                f'{param}_staged[j] = T.if_then_else(j < HIDDEN, T.cast({param.title()}[j], "float32"), 0.0)',
            )
        assert '_staged = T.alloc_fragment((columns,), "float32")' in kernel
    files["kernel.py"] = kernel
    return files


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "__init__.py").touch()
    for chain, sweep_name in CHAINS.items():
        spec_text = (SWEEP / f"{sweep_name}.toml").read_text()
        for threads in (128, 96, 192):
            for blocks in (None, 3, 5) if threads == 128 else (None,):
                for float32_weights in (False, True):
                    name = f"s_{chain}2880_t{threads}{f'b{blocks}' if blocks else ''}{'_w32' if float32_weights else ''}"
                    hints = f"threads = {threads}\n" + (f"blocks_per_sm = {blocks}\n" if blocks else "")
                    files = stream_text(spec_text, name, hints, float32_weights)
                    target = out / name
                    target.mkdir(exist_ok=True)
                    for file, text in files.items():
                        (target / file).write_text(text)
                    sys.path.insert(0, str(out))
                    module = importlib.import_module(f"{name}.kernel")
                    source = tilelang.compile(module.program_0(), target={"kind": "cuda", "arch": "sm_90a"}).get_kernel_source()
                    (target / "kernel.cu").write_text(source)
                    print(name, "cp.async 16 B:", source.count("cp_async_gs_conditional<16>"), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
