"""The CUDA TileLang produces for a few specs is the CUDA it produced before the emitters wrote kernel
factories (tests/cuda_golden/, written by `scripts/cuda_identity.py --build` from the tree before them:
a0d63a7, and 88e7de7 for the per-head and column-range members; routed-ln_head_partial_gptj_group
rewritten when the planner's 16-byte vector rule (issue 16) gave its 512-thread route 16-byte vectors;
case-mla_kv_a, case-quant_column_pinned_block_m4, routed-ln_head_partial_gptj_group and
routed-rope_tail_neox_64 rewritten when gptj pairs turned in registers and every block row took warps
of its own; case-quant_column_pinned_block_m4 and routed-ln_head_partial_gptj_group rewritten when the
fp8 amax began reducing |row| instead of TileLang's reduce_absmax; every one rewritten when kernels began
telling nvcc threadIdx.x < threads, and again when the norms' means became multiplies by 1 / N;
the two quant ones when the scale's division became two fmas; case-stream_ln_y_mean when a stream's
launch bound began sitting up to a fifth under the register estimate, 9 blocks an SM instead of 8;
case-quant_column_pinned_block_m4 when a block's column-major group scales began leaving through shared
memory, each group's rows as one run; the two routed ones when staged cos/sin rows began loading on every
thread, padded to whole passes of a row's threads; the two quant ones when each group's fp32 1/scale became
MUFU.RCP and one Newton step written out, __frcp_rn's fast path without its branch): a
change to how kernel.py reads must not
change the kernel. `scripts/cuda_identity.py` compares a whole corpus the same way (every example,
the model library, tests/cases.py, the oracle's specs and random specs)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "cuda_golden"
sys.path.insert(0, str(ROOT / "scripts"))
import cuda_identity  # noqa: E402  (a script, importable by name in the spawned compile workers too)
from cases import ROUTED  # noqa: E402


def test_the_cuda_is_what_tilelang_produced_before_the_factories(tmp_path, capsys):
    """A stream kernel, split-K with a ragged chunk, a padded row, column scales with a pinned count and
    four rows per block, a routed kernel (512 threads; 256 threads × 2 rows, prefetched), a per-head
    LayerNorm → per-head RoPE → group quant on both routes, and a norm over a column range of a padded
    row (DeepSeek MLA's kv_a)."""
    labels = sorted(path.stem for path in GOLDEN.glob("*.cu"))
    assert len(labels) == 7
    cuda_identity.build(tmp_path, random_specs=0, seed=0, jobs=2, only=labels)
    assert cuda_identity.compare(GOLDEN, tmp_path) == 0, capsys.readouterr().out


def test_compare_names_each_program_that_differs(tmp_path, capsys):
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir()
    after.mkdir()
    kernel = "// header\n// ==== program_0: a\n__global__ void k0() {}\n// ==== program_1: b\n__global__ void k1() {}\n"
    for directory in (before, after):
        (directory / "same.cu").write_text(kernel)
    (before / "changed.cu").write_text(kernel)
    (after / "changed.cu").write_text(kernel.replace("k1() {}", "k1() { __syncthreads(); }"))
    (before / "gone.cu").write_text(kernel)
    assert cuda_identity.compare(before, after) == 1
    out = capsys.readouterr().out
    assert "changed: program_1 differs" in out and "changed: program_0" not in out
    assert "gone: only in" in out and not any(line.startswith("same") for line in out.splitlines())
    (after / "changed.cu").write_text(kernel)
    (before / "gone.cu").unlink()
    assert cuda_identity.compare(before, after) == 0


def test_the_corpus_routes_every_per_head_and_column_range_case():
    """Per-head and column-range kernels get programs of their own shape (per-head reductions, a span per
    head, guarded per-column loads): each such case is compiled alone and with the routed cases' two
    routes (one row, then two rows per block, prefetched), and the oracle's specs add other widths."""
    corpus = cuda_identity.corpus(random_specs=0, seed=0)
    shaped = {label for label, (spec, _, _) in corpus.items() if cuda_identity.heads_or_columns(spec)}
    cases = {label.removeprefix("case-") for label in shaped if label.startswith("case-")}
    assert cases and cases == {label.removeprefix("routed-") for label in shaped if label.startswith("routed-")}
    assert corpus[f"routed-{min(cases)}"][2] == ROUTED
    assert {"oracle-mla_kv_a", "oracle-ln_head_partial_gptj_group"} <= shaped


QUANT_GOLDEN = "case-quant_column_pinned_block_m4.cu"  # bf16 in 16-byte vectors: 8 values an access


def quant_check_passes(cuda: str, name: str) -> bool:
    """Whether quant_fp8's CUDA check `name` passes on `cuda` (a kernel of 8-value vectors)."""
    from types import SimpleNamespace

    from fusegen.ops.quant_fp8 import check_cuda

    return next(c for c in check_cuda(cuda, SimpleNamespace(vector_elems=8)) if c.name == name).ok


def test_the_amax_check_tells_fabsf_from_a_max_of_x_and_its_negation():
    """quant_fp8's CUDA check "amax of |x|" passes the golden quant kernel and fails the same kernel with
    its amax step written as TileLang's reduce_absmax wrote it (a negate and two maxes per element)."""
    source = (GOLDEN / QUANT_GOLDEN).read_text()
    step = "group_scale[i_2] = max(group_scale[i_2], row_abs[((i_2 * 8) + rv)]);"
    assert step in source
    negated = source.replace("fabsf(", "(").replace(
        step, "group_scale[i_2] = max(group_scale[i_2], max(row[((i_2 * 8) + rv)], (0x0p+0f/*0.000000e+00*/ - row[((i_2 * 8) + rv)])));"
    )
    assert quant_check_passes(source, "amax of |x|")
    assert not quant_check_passes(negated, "amax of |x|")


def test_the_thread_bound_check_wants_the_bound_unfolded():
    """The CUDA check "nvcc told threadIdx.x < threads" passes the golden padded kernel and fails it where
    the assumption was folded to true (what TileLang does to a plain `threadIdx.x < threads`), missing, or
    of another block size."""
    from fusegen.cuda_checks import thread_bound

    source = (GOLDEN / "case-rms_fp16_4000_padded.cu").read_text()
    told = "__builtin_assume((int(((int)threadIdx.x)) < 128));"
    assert source.count(told) == 1
    assert thread_bound(source, 128).ok
    assert not thread_bound(source.replace(told, "__builtin_assume((bool)1);"), 128).ok
    assert not thread_bound(source.replace(told, ""), 128).ok
    assert not thread_bound(source, 256).ok


def test_the_pinned_side_input_check_wants_no_restrict():
    """The CUDA check "pinned side inputs not __restrict__" fails the golden padded kernel, whose Weight is
    __restrict__, and passes it with the qualifier gone; a parameter the kernel lacks fails it."""
    from fusegen.cuda_checks import unrestricted

    source = (GOLDEN / "case-rms_fp16_4000_padded.cu").read_text()
    assert "const half_t* __restrict__ Weight" in source
    assert not unrestricted(source, ["Weight"]).ok
    assert unrestricted(source.replace("__restrict__ Weight", "Weight"), ["Weight"]).ok
    assert not unrestricted(source.replace("__restrict__ Weight", "Weight"), ["Weight", "Bias"]).ok


def test_the_scale_check_wants_fmas_not_a_division():
    """quant_fp8's CUDA check "scale by fmas, no division" passes the golden quant kernel and fails it with
    the scale written as the division nvcc compiles with a branch to its slow path; an integer division in an
    index (the warps of a block row of 160 threads: a probe128 build failed the check on it) is no division."""
    source = (GOLDEN / QUANT_GOLDEN).read_text()
    step = next(line for line in source.splitlines() if "group_scale[i_3] = __fmaf_rn(" in line)
    divided = source.replace(step, "    group_scale[i_3] = (group_scale[i_3] / 0x1.cp+8f/*4.480000e+02*/);")
    indexed = source.replace(step, f"    group_scale[0] = ((float*)row_amax_warps)[((((int)threadIdx.x) / 160) * 5)];\n{step}")
    assert quant_check_passes(source, "scale by fmas, no division")
    assert not quant_check_passes(divided, "scale by fmas, no division")
    assert quant_check_passes(indexed, "scale by fmas, no division")


def test_the_tile_loop_check_wants_each_statistics_pass_unrolled_and_the_finishing_pass_only_where_held():
    """The CUDA check of a reread program's tile loops (TileLang writes T.unroll as `#pragma unroll`): each of
    the chain's statistics passes unrolled, the finishing pass unrolled exactly where the schedule holds the
    tiles; a chain whose statistics all lie within a tile (a norm over each head) has the finishing pass only."""
    from fusegen.cuda_checks import tile_loops

    statistics = "  #pragma unroll\n  for (int tile = 0; tile < 4; ++tile) {\n  }\n"
    second = statistics.replace("tile", "tile_2")
    finishing = "  for (int tile_1 = 0; tile_1 < 4; ++tile_1) {\n  }\n"
    read_again, held = statistics + finishing, statistics + "  #pragma unroll\n" + finishing
    assert tile_loops(read_again, 4, held=False, passes=1).ok
    assert tile_loops(held, 4, held=True, passes=1).ok
    assert tile_loops(statistics + second + finishing, 4, held=False, passes=2).ok  # LayerNorm: mean, then variance
    assert tile_loops(finishing, 4, held=False, passes=0).ok
    assert not tile_loops(read_again, 4, held=True, passes=1).ok
    assert not tile_loops(held, 4, held=False, passes=1).ok
    assert not tile_loops(held, 3, held=True, passes=1).ok  # another tile count than planned
    assert not tile_loops(finishing, 4, held=False, passes=1).ok  # no statistics pass
    assert not tile_loops(read_again, 4, held=False, passes=0).ok  # a pass the chain has no statistics for
    assert not tile_loops(read_again, 4, held=False, passes=2).ok  # a pass missing
    assert not tile_loops(statistics.replace("#pragma unroll", "") + finishing, 4, held=False, passes=1).ok


def test_the_staged_row_check_wants_no_thread_guard():
    """The CUDA check "staged rows loaded on every thread" passes the golden routed RoPE kernel, whose cos/sin
    staging runs on every thread (plan.whole_thread_extent), and fails it with the stores put back under
    `if (threadIdx.x < 64)`, as TileLang writes a loop over fewer entries than threads; a buffer the kernel
    never stores fails it too."""
    from fusegen.cuda_checks import staged_rows_on_every_thread

    source = (GOLDEN / "routed-rope_tail_neox_64.cu").read_text()
    store = "  ((float*)cos_staged)[((int)threadIdx.x)] = condval_2;"
    assert source.count(store) == 1
    assert staged_rows_on_every_thread(source, ["cos_staged", "sin_staged"]).ok
    guarded = source.replace(store, "  if (((int)threadIdx.x) < 64) {\n  " + store + "\n  }")
    assert not staged_rows_on_every_thread(guarded, ["cos_staged", "sin_staged"]).ok
    assert not staged_rows_on_every_thread(source, ["cos_staged", "positions_staged"]).ok
