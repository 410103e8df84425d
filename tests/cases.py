"""Named spec variations that reach every planner and emitter path. Each says what it is for.
The CPU suite compiles all of them and checks their CUDA; the GPU matrix runs them against the
reference at many token counts."""

from __future__ import annotations

from fusegen.plan import plan
from fusegen.spec import KernelSpec
from fusegen.tuning import TunedRoute

ADD = {"kind": "add_residual"}
RMS = {"kind": "rmsnorm"}
LN = {"kind": "layernorm"}


def rope(dim=64, **kw):
    return {"kind": "rope", "rope_dim": dim, **kw}


def quant(group="token", **kw):
    return {"kind": "quant_fp8", "group_size": group, **kw}


def rescale(factor=1.0, **kw):
    return {"kind": "rescale", "factor": factor, **kw}


def case(purpose, ops, dtype="bfloat16", hidden=4096, outputs=None, schedule=None, tokens=None, head_dim=None):
    spec = {"dtype": dtype, "hidden": hidden, "op": ops, "tokens": tokens}
    if head_dim:
        spec["head_dim"] = head_dim
    if outputs:
        spec["outputs"] = outputs
    if schedule:
        spec["schedule"] = schedule
    return purpose, spec


CASES = {
    # Seed chains at production widths and dtypes.
    "rms_fp16_4096": case("plain RMSNorm, 16-byte vectors, 256 threads", [RMS], "float16"),
    "rms_fp32_4096": case("float32 activations: 4-element vectors, 1e-4 tolerances", [RMS], "float32"),
    "rms_bf16_7168": case("7168 = 7·1024: 8-byte vectors, no padding", [RMS], hidden=7168),
    "rms_bf16_8192": case("wide row, 32 values per thread", [RMS], hidden=8192),
    "rms_bf16_5120": case("5120: 20 values per thread", [RMS], hidden=5120),
    "rms_bf16_1536": case("1536: a small model width", [RMS], hidden=1536),
    "rms_bf16_256": case("the seed's small width: one warp per row, four rows a block from 1025 tokens", [RMS], hidden=256),
    "short_rows_gathered": case(
        "a 512-byte row that gathers its cos/sin row: the planner's two rows a block from 1025 tokens",
        [RMS, rope(64, source="cache", max_position=8192)],
        hidden=256,
    ),
    "short_rows_gathered_kilobyte": case(
        "a kilobyte row that gathers its cos/sin row, 16 values a thread: two rows a block from 1025 tokens, where one would stream",
        [RMS, rope(64, source="cache", max_position=8192)],
        hidden=512,
    ),
    "short_rows_quant_padded": case(
        "a 1008-byte row padded to 512 columns, FP8 only: the planner's two rows a block from 1025 tokens",
        [RMS, quant()],
        "float16",
        504,
        outputs={"y": False},
    ),
    "rms_fp16_4000_padded": case("4000 is not a multiple of 8·threads: row padded to 4096, masked", [RMS], "float16", 4000),
    "rms_bf16_1000_padded": case("1000: padded to 1024 with 64 threads", [RMS], hidden=1000),
    "rms_fp16_1001_scalar": case("odd width: scalar accesses, padding", [RMS], "float16", 1001),
    "rms_rstd_no_weight": case("rstd output, no weight", [{"kind": "rmsnorm", "weight": False}], outputs={"rstd": True}),
    "rms_naive": case("naive variant: row staged in shared memory", [RMS], "float16", schedule={"variant": "naive"}),
    "rms_splitk": case("split-K: two passes over 1024-column chunks", [RMS], "float16", schedule={"variant": "splitk", "blk_k": 1024}),
    "rms_splitk_ragged": case(
        "split-K with a ragged last chunk (5120 = 4.x·1024 → 5 chunks of 1024)",
        [RMS],
        hidden=5120,
        schedule={"variant": "splitk", "blk_k": 1024},
    ),
    "rms_splitk_padded_chunk": case(
        "split-K whose chunk overhangs the row (1000 columns, 512-wide chunks)",
        [RMS],
        hidden=1000,
        schedule={"variant": "splitk", "blk_k": 512},
    ),
    "rms_block_m4": case("four rows per block: row guards on the last partial block", [RMS], hidden=1024, schedule={"block_m": 4}),
    "ln_fp16_4096": case("LayerNorm with Y, Mean, Rstd", [LN], "float16", outputs={"mean": True, "rstd": True}),
    "ln_bf16_4000_padded": case(
        "LayerNorm on a padded row: centred padding must not enter the variance", [LN], hidden=4000, outputs={"mean": True}
    ),
    "ln_fp32_768_no_affine": case(
        "LayerNorm without weight and bias", [{"kind": "layernorm", "weight": False, "bias": False}], "float32", 768
    ),
    # RoPE pairing.
    "rope_tail_neox_64": case("RMSNorm → tail NeoX 64 (the seed's fused chain)", [RMS, rope(64)]),
    "rope_tail_neox_32_small": case("the seed's small shape: N = 256, rope_dim 32", [RMS, rope(32)], "float16", 256),
    "rope_tail_neox_64_n512": case("a span that is an eighth of a one-warp row", [RMS, rope(64)], hidden=512),
    "rope_tail_neox_64_padded": case("RoPE on a padded row (1000 → 1024)", [RMS, rope(64)], hidden=1000),
    "rope_head_gptj_128": case("head span, GPT-J pairs (DeepSeek MLA style)", [RMS, rope(128, span="head", style="gptj")]),
    "rope_tail_gptj_64_7168": case("tail GPT-J on 8-byte vectors", [RMS, rope(64, style="gptj")], hidden=7168),
    "rope_full_row_128": case("rope_dim = hidden: the whole row rotates", [RMS, rope(128)], "float32", 128),
    "rope_block_m2": case(
        "two rows per block: cos/sin reads guarded past the last token", [RMS, rope(64)], hidden=2048, schedule={"block_m": 2}
    ),
    "rope_alone": case("RoPE with no norm before it", [rope(64)], "float16", 1024),
    # FP8 quantisation.
    "quant_token_y": case("the seed's capstone: Y, Q, per-token Scale", [RMS, rope(64), quant()], "float16"),
    "quant_token_no_y": case("Y dropped: Q and Scale only", [RMS, rope(64), quant()], "float16", outputs={"y": False}),
    "quant_g128_bf16_7168": case("group 128 on 8-byte vectors", [RMS, rope(64), quant(128)], hidden=7168),
    "quant_g64_e5m2_ue8m0": case("e5m2 codes with power-of-two scales", [RMS, rope(64), quant(64, fp8="e5m2", scale="ue8m0")]),
    "quant_g128_fp32": case("float32 activations into group quant", [RMS, quant(128)], "float32", 2048),
    "quant_g32_padded": case("32-wide groups on a padded row (4000 → 4096)", [RMS, quant(32)], hidden=4000),
    "quant_ln_rope_g128": case(
        "LayerNorm → GPT-J tail RoPE 128 → group 128",
        [LN, rope(128, style="gptj"), quant(128)],
        "float16",
        outputs={"y": False, "mean": True, "rstd": True},
    ),
    "quant_alone": case("per-token cast to FP8 with no other op", [quant()], "float16", 2048),
    "quant_alone_g128_block_m2": case("group quant, two rows per block", [quant(128)], hidden=1024, schedule={"block_m": 2}),
    "quant_rope_256": case("RoPE → quant at the seed's small width", [rope(32), quant(128)], "float16", 256),
    "rms_block_m4_one_warp": case(
        "four short rows on a warp each: the warp-partial store is vectorised",
        [RMS, quant(64, scale="ue8m0")],
        "float32",
        128,
        schedule={"block_m": 4, "threads": 128},
    ),
    "rope_dim_8_narrows_vectors": case(
        "rope_dim 8 at 8-element vectors would sit in one thread: the span loops hold it on 8-byte vectors (rope.layout_refusal)",
        [RMS, rope(8)],
        hidden=4096,
    ),
    # Passed on the H200 (2026-12-03, session 31). schedule._row_schedule's padded counts of warps: 4352 on 192 threads × three 16-byte vectors, padded to
    # 4608, its groups of 128 tiling the 1536-column row tile; and a launch bound from schedule.filled_sm.
    "padded_warp_count_groups": case(
        "4352 fp16 columns on 192 threads, padded to 4608 for three 16-byte vectors a thread, FP8 groups of 128",
        [RMS, rope(64), quant(128)],
        "float16",
        hidden=4352,
        outputs={"y": False},
    ),
    "filled_sm_bound_layernorm": case(
        "bf16 LayerNorm 9216 on 288 threads under a launch bound of three blocks an SM (schedule.filled_sm)",
        [LN],
        hidden=9216,
    ),
    "fp8_row_full_sm_bound": case(
        "fp32 LayerNorm → RoPE → FP8 5248 on 128 threads × six blocks an SM, weight and bias read where used (schedule.fp8_row_full_sm)",
        [LN, rope(128, span="tail"), quant(64, scale="ue8m0")],
        "float32",
        hidden=5248,
        outputs={"y": False},
    ),
    "staged_rows_every_thread": case(
        "per-head RMSNorm → cache RoPE on each head's last 128 of 256 columns, 5632 on 256 threads: the 128-entry"
        " cos_sin_cache row staged on all of them, the padding repeating its last entry (plan.whole_thread_extent)",
        [{"kind": "rmsnorm", "over": "head"}, rope(128, span="tail", source="cache", max_position=32768)],
        "float16",
        hidden=5632,
        head_dim=256,
    ),
    # Passed on the H200 (2026-12-03). A span the loops over it alone cannot lay out turns in the row tiles
    # holding it (rope.rope_loop "tiles"), the row on vectors wider than the span's own.
    "rope_span_tiles_wrap": case(
        "a 128-wide gptj tail span at columns 72..199, wrapping a 128-column tile: turned in the two tiles holding it",
        [LN, rope(128, style="gptj")],
        "float32",
        200,
    ),
    "rope_dim_2_span_tiles": case(
        "the smallest span, one gptj pair, turned in registers in the row tile holding it",
        [LN, rope(2, style="gptj"), quant(8)],
        "float32",
        640,
    ),
    "rope_cache_span_tiles": case(
        "a neox pair at the row's head read from the cos/sin cache, turned through shared memory in the row tile holding it",
        [RMS, rope(2, span="head", source="cache", max_position=4096), quant(128)],
        hidden=7168,
        outputs={"y": False},
    ),
    "quant_pinned_999_tokens": case(
        "token count pinned by the spec (static shapes), 4 rows per block, partial last block",
        [RMS, rope(64), quant(128)],
        tokens=999,
        schedule={"block_m": 4},
    ),
    # Side inputs loaded where they are used (prefetch off: the path every kernel took before step 9).
    "rope_quant_no_prefetch": case(
        "RMSNorm → RoPE → group quant with weight and cos/sin read after the reductions",
        [RMS, rope(64), quant(128)],
        "float16",
        schedule={"prefetch": False},
    ),
    "ln_padded_no_prefetch": case(
        "LayerNorm on a padded row, weight and bias read in place", [LN], hidden=1000, schedule={"prefetch": False}
    ),
    "ln_padded_block_m2_prefetch": case(
        "staged weight and bias with zeroed padding, two rows sharing them", [LN, rope(64)], hidden=1000, schedule={"block_m": 2}
    ),
    # Not a power of two warps (tuning searches these counts).
    "threads_224_group128_7168": case(
        "7 warps (not a power of two) × 16-byte vectors, groups of 128 tiling 1792-column tiles",
        [RMS, rope(64), quant(128)],
        hidden=7168,
        schedule={"threads": 224},
    ),
    "threads_96_ln_rope_1536": case("3 warps over a LayerNorm → RoPE row", [LN, rope(64)], "float16", 1536, schedule={"threads": 96}),
    # The norm's sum of squares and the per-token amax in one exchange, rstd applied after (step 13).
    "joint_token_y_block_m2": case(
        "joint reduction with Y written, two rows per block",
        [RMS, rope(64), quant()],
        "float16",
        schedule={"joint_reduction": True, "block_m": 2},
    ),
    "joint_padded_rstd_no_weight": case(
        "joint reduction on a padded row without weight, Rstd written, no Y",
        [{"kind": "rmsnorm", "weight": False}, quant()],
        "float16",
        1000,
        outputs={"y": False, "rstd": True},
        schedule={"joint_reduction": True},
    ),
    "joint_gptj_e5m2_224_threads": case(
        "joint reduction, GPT-J span, e5m2 with power-of-two scales, 7 warps",
        [RMS, rope(64, style="gptj"), quant(fp8="e5m2", scale="ue8m0")],
        hidden=7168,
        outputs={"y": False},
        schedule={"joint_reduction": True, "threads": 224},
    ),
    # A persistent grid streaming rows through a cp.async ring in shared memory (variant "stream").
    "stream_fp8_only": case(
        "the fp8-only seed chain streamed, 4 warps, blocks per SM from the planner",
        [RMS, rope(64), quant()],
        "float16",
        outputs={"y": False},
        schedule={"variant": "stream", "threads": 128},
    ),
    "stream_joint_bf16_7168": case(
        "stream with the joint reduction, 7168 columns, 3 blocks per SM, two rows in flight",
        [RMS, rope(64), quant()],
        hidden=7168,
        outputs={"y": False},
        schedule={"variant": "stream", "threads": 128, "blocks_per_sm": 3, "joint_reduction": True, "ring_slots": 3},
    ),
    "stream_ln_y_mean": case(
        "stream over a LayerNorm → RoPE row of 1536 columns (64 threads × 3 vectors) with Y and Mean, a 4-slot ring; weight and bias staged once",
        [LN, rope(64)],
        hidden=1536,
        outputs={"mean": True},
        schedule={"variant": "stream", "threads": 64, "ring_slots": 4},
    ),
    "stream_no_prefetch_g128": case(
        "stream with cos/sin and weight read in place (only X through the ring), group 128",
        [RMS, rope(64), quant(128)],
        hidden=2048,
        schedule={"variant": "stream", "prefetch": False},
    ),
    "stream_pinned_37_tokens": case(
        "stream with the token count pinned below the grid: one row per block",
        [RMS, rope(64, span="head", style="gptj"), quant(64, fp8="e5m2", scale="ue8m0")],
        "float32",
        1024,
        tokens=37,
        schedule={"variant": "stream"},
    ),
    "stream_pinned_5000_tokens": case(
        "stream with the token count pinned above the grid, one block per SM",
        [RMS, quant()],
        hidden=4096,
        tokens=5000,
        schedule={"variant": "stream", "blocks_per_sm": 1},
    ),
    "stream_group_quant_alone": case(
        "stream of a chain with no cross-warp exchange: the ring's own barriers order its slots",
        [quant(128)],
        hidden=1024,
        schedule={"variant": "stream"},
    ),
    # Streams of padded rows: each thread cp.async-copies its own vectors into the ring, the last tile masked.
    "stream_padded_ln_e5m2_2880": case(
        "a padded row streamed: 360 vectors over 128 threads, the third tile's last 24 threads copy nothing; weight and bias staged once",
        [LN, quant(fp8="e5m2")],
        hidden=2880,
        outputs={"y": False},
        schedule={"variant": "stream", "threads": 128},
    ),
    "stream_padded_rope_quant_7168_512": case(
        "7168 columns over 512 threads (14 a thread): a padded 8192-column ring, Y written, cos/sin through their own rings",
        [RMS, rope(64), quant(128)],
        "float16",
        hidden=7168,
        schedule={"variant": "stream", "threads": 512},
    ),
    "stream_padded_short_1000": case(
        "a short padded row streamed: 125 vectors over one warp, several slots of the ring per SM",
        [RMS, quant()],
        hidden=1000,
        outputs={"y": False},
        schedule={"variant": "stream", "threads": 32},
    ),
    # RoPE partners by warp shuffle where the lanes allow it, through shared memory where they do not (step 15).
    "rope_head_neox_256_whole_warp": case(
        "a neox head span held by one whole warp: partners 16 lanes apart, every lane in the shuffle",
        [RMS, rope(256, span="head"), quant()],
        "float16",
        outputs={"y": False},
    ),
    "rope_neox_512_two_warps": case(
        "a neox span over two warps: partners a warp apart, paired through shared memory", [RMS, rope(512), quant(128)]
    ),
    # Passed on the H200 (2026-12-01): add_residual, rope source = cache, column scales, weight_offset.
    # Column-major, TMA-aligned scales (scale_layout = "column"): 1, 3 and 255 tokens pad the column.
    "quant_column_g128_bf16_7168": case(
        "DeepSeek-V3's activation quant: group 128, scales column-major for the FP8 GEMM",
        [RMS, quant(128, scale_layout="column")],
        hidden=7168,
        outputs={"y": False},
    ),
    "quant_column_g128_fp16_ue8m0": case(
        "column-major power-of-two scales with Y written", [RMS, rope(64), quant(128, scale="ue8m0", scale_layout="column")], "float16"
    ),
    "quant_column_token": case(
        "per-token scales in the column layout: one column, strides (1, M padded)", [RMS, quant(scale_layout="column")], "float16", 2048
    ),
    "quant_column_pinned_block_m4": case(
        "column scales with the token count pinned (999 → stride 1000), 4 rows per block",
        [quant(128, scale_layout="column")],
        hidden=1024,
        tokens=999,
        schedule={"block_m": 4},
    ),
    "quant_column_stream_joint": case(
        "column scales from the stream variant with the joint reduction",
        [RMS, quant(scale_layout="column")],
        hidden=4096,
        outputs={"y": False},
        schedule={"variant": "stream", "joint_reduction": True},
    ),
    "quant_column_stream_g128": case(
        "column group scales from the stream variant",
        [RMS, quant(128, scale_layout="column")],
        "float16",
        4096,
        schedule={"variant": "stream"},
    ),
    # Passed on the H200 (2026-12-03). Column-major scales in groups of 8 and 16 (schedule.sector_rows):
    # several rows a block from 1025 tokens, each group's rows stored as one run from shared memory.
    "quant_column_g8_sector_rows": case(
        "column-major ue8m0 scales in groups of 8: 8 rows a block from 1025 tokens, a group's 8 rows one 32-byte run",
        [quant(8, fp8="e5m2", scale="ue8m0", scale_layout="column")],
        "float32",
        896,
        outputs={"y": False},
    ),
    "rope_column_g16_sector_rows": case(
        "RMSNorm → GPT-J RoPE on each head's last 2 columns → column scales in groups of 16: 8 rows of 64 threads a block",
        [RMS, rope(2, span="tail", style="gptj"), quant(16, scale_layout="column")],
        hidden=3584,
        head_dim=112,
    ),
    # Gemma's RMSNorm scales by 1 + w (weight_offset), its weights near 0.
    "rms_gemma_offset_3840": case(
        "Gemma 3 12B's width: weight_offset 1.0, weight staged with the offset in float32",
        [{"kind": "rmsnorm", "weight_offset": 1.0}],
        hidden=3840,
    ),
    "rms_gemma_offset_stream_quant": case(
        "weight_offset staged once per persistent block, then group quant",
        [{"kind": "rmsnorm", "weight_offset": 1.0}, quant(128)],
        hidden=2048,
        schedule={"variant": "stream"},
    ),
    "rms_gemma_offset_no_prefetch": case(
        "weight_offset added where the weight is read (no staging), joint reduction",
        [{"kind": "rmsnorm", "weight_offset": 1.0}, quant()],
        hidden=1000,
        schedule={"prefetch": False, "joint_reduction": True},
    ),
    "rms_gemma_offset_splitk": case(
        "weight_offset in split-K's second pass, ragged last chunk",
        [{"kind": "rmsnorm", "weight_offset": 1.0}],
        hidden=5120,
        schedule={"variant": "splitk", "blk_k": 1024},
    ),
    "rms_gemma_offset_naive": case(
        "weight_offset in the naive variant", [{"kind": "rmsnorm", "weight_offset": -0.5}], "float16", 2048, schedule={"variant": "naive"}
    ),
    # The residual add before the norm (every decoder layer of Llama, Qwen, DeepSeek).
    "add_rms_quant_token_bf16": case(
        "residual add → RMSNorm → per-token e4m3 at Llama-3.1-8B's width: residual_out, Q, Scale", [ADD, RMS, quant()], outputs={"y": False}
    ),
    "add_rms_y_fp16": case(
        "residual add → RMSNorm with Y and residual_out (test_add_residual runs it in place too)", [ADD, RMS], "float16"
    ),
    "add_ln_padded_block_m2": case(
        "residual add → LayerNorm on a padded row (1000 → 1024), two rows per block: masked residual loads and stores, Mean",
        [ADD, LN],
        hidden=1000,
        outputs={"mean": True},
        schedule={"block_m": 2},
    ),
    "add_fp32_no_residual_out": case(
        "float32 stream (no rounding), residual_out off: only Y leaves", [ADD, RMS], "float32", 2048, outputs={"residual": False}
    ),
    "add_joint_fragment_7168": case(
        "residual add before a joint reduction (fragment, weight staged): the add runs ahead of the norm's partials",
        [ADD, RMS, quant()],
        hidden=7168,
        outputs={"y": False},
        schedule={"joint_reduction": True},
    ),
    "add_stream_joint_rope": case(
        "residual add in the stream variant, read in place beside the ring, joint reduction, RoPE",
        [ADD, RMS, rope(64), quant()],
        outputs={"y": False},
        schedule={"variant": "stream", "threads": 128},
    ),
    # RoPE reading cos/sin from a cos_sin_cache at each token's position (source = "cache").
    "rope_cache_neox_tail_64_fp16": case(
        "RMSNorm → tail NeoX 64 from a 131072-position cache, staged per block",
        [RMS, rope(64, source="cache", max_position=131072)],
        "float16",
    ),
    "rope_cache_gptj_head_bf16": case(
        "head GPT-J 128 from the cache read in place (no prefetch), four rows per block: guarded gathers",
        [RMS, rope(128, span="head", style="gptj", source="cache", max_position=32768)],
        hidden=1024,
        schedule={"prefetch": False, "block_m": 4},
    ),
    "rope_cache_stream_quant": case(
        "stream: each cache row cp.async-copied into the ring at the position read first",
        [RMS, rope(64, source="cache", max_position=8192), quant(128)],
        "float16",
        outputs={"y": False},
        schedule={"variant": "stream", "threads": 128},
    ),
    "rope_cache_edges_4096": case(
        "a 4096-position cache; the sampler puts the first and last token at positions 0 and 4095",
        [rope(64, style="gptj", source="cache", max_position=4096), quant()],
        hidden=2048,
    ),
    # Per-head norms and RoPE, column ranges (issue 14).
    "qk_norm_rope_shuffle": case(
        "per-head RMSNorm (rstd per head) + whole-head neox RoPE from the cache by warp shuffle",
        [{"kind": "rmsnorm", "over": "head"}, rope(128, source="cache", max_position=4096)],
        head_dim=128,
        outputs={"rstd": True},
    ),
    "qk_norm_gemma_256": case(
        "per-head RMSNorm with weight_offset 1 over 256-wide heads, RoPE of the whole head",
        [{"kind": "rmsnorm", "over": "head", "weight_offset": 1.0}, rope(256)],
        hidden=2048,
        head_dim=256,
    ),
    "ln_head_partial_gptj_group": case(
        "per-head LayerNorm (mean, rstd per head), partial gptj RoPE at each head's start, group quant",
        [{"kind": "layernorm", "over": "head"}, rope(32, style="gptj", span="head"), quant(64)],
        "float16",
        hidden=1024,
        head_dim=64,
        outputs={"mean": True, "rstd": True},
    ),
    "head_norm_padded_block_m": case(
        "per-head norm on a padded row (640 = 10 heads of 64, padded to 1024: each row on 64 threads × 8) with 4 rows per block",
        [{"kind": "rmsnorm", "over": "head"}, rope(64)],
        hidden=640,
        head_dim=64,
        outputs={"rstd": True},
        schedule={"block_m": 4, "threads": 256},
    ),
    "mla_kv_a": case(
        "RMSNorm over columns [0, 512) of 576, gptj RoPE on the last 64 from the cache (DeepSeek MLA kv_a)",
        [{"kind": "rmsnorm", "columns": [0, 512]}, rope(64, style="gptj", source="cache", max_position=8192)],
        hidden=576,
        outputs={"rstd": True},
    ),
    "mla_q_b_heads_192": case(
        "gptj RoPE on the last 64 of every 192-wide head (heads do not tile the threads' columns)",
        [rope(64, style="gptj", source="cache", max_position=8192)],
        hidden=3072,
        head_dim=192,
    ),
    "ln_columns_quant": case(
        "LayerNorm over a column range in the middle, per-token quant of the whole row",
        [{"kind": "layernorm", "columns": [256, 3840]}, quant()],
        "float32",
        outputs={"mean": True, "rstd": True},
    ),
    # Short rows, several per block (issue 14): each block row on whole warps of its own; RoPE partners
    # in registers or by a shuffle every lane reaches.
    "head_partial_neox_shuffle": case(
        "neox RoPE over the first half of every 128-wide head by a shuffle of all lanes, every lane reaching it",
        [rope(64, span="head")],
        hidden=1024,
        head_dim=128,
    ),
    "mla_kv_a_block_m4": case(
        "the kv_a chain at 4 rows per block: a row per warp, its tail RoPE in registers over the whole row",
        [{"kind": "rmsnorm", "columns": [0, 512]}, rope(64, style="gptj", source="cache", max_position=8192)],
        hidden=576,
        outputs={"rstd": True},
        schedule={"block_m": 4},
    ),
    "rope_neox_block_m4_shuffle": case(
        "tail neox RoPE at 4 rows per block of 2 warps each: the shuffle over the whole row on every lane",
        [RMS, rope(64)],
        hidden=2048,
        schedule={"block_m": 4, "threads": 256},
    ),
    # A rescale after the norm, before or after RoPE (softmax scale, √hidden, LayerScale).
    "rescale_rms_quant_token": case(
        "RMSNorm → rescale by √hidden → per-token e4m3: the factor a constant of the kernel", [RMS, rescale(64.0), quant()]
    ),
    "rescale_qk_head_rope": case(
        "QK-norm per head → RoPE → the softmax scale 1/√head_dim folded into q (Qwen3's q at 32 heads of 128)",
        [{"kind": "rmsnorm", "over": "head"}, rope(128), rescale(128**-0.5)],
        head_dim=128,
    ),
    "rescale_ln_layerscale_rope": case(
        "LayerNorm → LayerScale's weight alone (factor 1), staged like the norm's → RoPE", [LN, rescale(weight=True), rope(64)], "float16"
    ),
    "rescale_weight_in_place_padded": case(
        "rescale weight read in place (no prefetch) on a padded row (1000 → 1024): masked per-column loads",
        [RMS, rescale(0.5, weight=True)],
        hidden=1000,
        schedule={"prefetch": False},
    ),
    "rescale_stream_joint": case(
        "stream, joint reduction spanning the rescale: its weight staged next to the ring, the amax of x·w·factor·γ before rstd",
        [RMS, rescale(0.125, weight=True), quant()],
        hidden=512,
        outputs={"y": False},
        schedule={"variant": "stream", "joint_reduction": True},
    ),
    # Heads that are not a power of two of lanes wide (Phi-3: 96): per-head statistics summed in slices of a
    # power of two of lanes, the slices' sums added through shared memory (norm.head_slice).
    "head_norm_96_rope": case(
        "QK-norm over heads of 96 (8 heads) → neox RoPE of 32 in each: slices of 4 or 8 lanes, 16-byte vectors",
        [{"kind": "rmsnorm", "over": "head"}, rope(32)],
        hidden=768,
        head_dim=96,
        outputs={"rstd": True},
    ),
    "head_layernorm_192": case(
        "per-head LayerNorm over heads of 192 (16 heads), mean and rstd per head",
        [{"kind": "layernorm", "over": "head"}],
        "float32",
        hidden=3072,
        head_dim=192,
        outputs={"mean": True, "rstd": True},
    ),
    # Per-head statistics summed in slices whose sums meet in shared memory, on the layouts and variants that
    # reuse or share that memory (session 37: passed on the H200, racecheck clean).
    "head_layernorm_96_shared_warps": case(
        "per-head LayerNorm over two heads of 96 on rows sharing warps (4 rows of 8 lanes a warp): slices of 4 lanes",
        [{"kind": "layernorm", "over": "head"}],
        hidden=192,
        head_dim=96,
        outputs={"mean": True, "rstd": True},
    ),
    "head_norm_192_stream": case(
        "QK-norm over heads of 192 → gptj RoPE 64 in each, streamed: the slices' shared sums reused row after row",
        [{"kind": "rmsnorm", "over": "head"}, rope(64, span="head", style="gptj")],
        hidden=6144,
        head_dim=192,
        schedule={"variant": "stream"},
    ),
    "head_norm_192_reread": case(
        "RMSNorm over heads of 192 read in tiles (variant reread): each tile's heads summed in slices as it is loaded",
        [{"kind": "rmsnorm", "over": "head"}],
        hidden=6144,
        head_dim=192,
        outputs={"rstd": True},
        schedule={"variant": "reread"},
    ),
    "head_norm_40_one_lane": case(
        "RMSNorm over heads of 40 (five 16-byte vectors): slices of one lane, five sums a head, rstd per head",
        [{"kind": "rmsnorm", "over": "head"}],
        hidden=1280,
        head_dim=40,
        outputs={"rstd": True},
    ),
    "head_layernorm_40_gathered_stats": case(
        "per-head LayerNorm over heads of 40 on 128 threads (tiles of 1024 columns split heads): each vector's "
        "statistic read once from shared memory, where a gather of 8 floats a vector failed to compile",
        [{"kind": "layernorm", "over": "head"}, rescale(0.5)],
        hidden=320,
        head_dim=40,
        schedule={"threads": 128},
    ),
    # The whole-kernel variants asked for the statistics alone (a random spec found both failing to compile).
    "naive_rstd_only": case(
        "the textbook RMSNorm (row in shared memory) writing rstd only: one pass over the row, no Y",
        [RMS],
        "float32",
        hidden=4000,
        outputs={"y": False, "rstd": True},
        schedule={"variant": "naive", "block_m": 2},
    ),
    "naive_two_rows_padded_width": case(
        "the textbook RMSNorm at 2 rows per block on a width that is not a power of two (bf16 768)",
        [RMS],
        hidden=768,
        schedule={"variant": "naive", "block_m": 2},
    ),
    "splitk_rstd_only": case(
        "split-K RMSNorm writing rstd only: pass 1 alone, its chunks' x² summed and reduced once",
        [RMS],
        "float32",
        hidden=3072,
        outputs={"y": False, "rstd": True},
        schedule={"variant": "splitk", "threads": 1024, "blk_k": 1024},
    ),
    # A row split over several blocks (schedule row_split), each holding contiguous columns: whole heads and groups.
    "mla_q_b_split8": case(
        "DeepSeek-V3's q_b RoPE (128 heads of 192, gptj tail 64 from the cache) with each row split over 8 blocks of 16 heads",
        [rope(64, style="gptj", source="cache", max_position=8192)],
        hidden=24576,
        head_dim=192,
        schedule={"row_split": 8},
    ),
    "mla_q_b_split16_8_tokens": case(
        "the q_b RoPE at 8 tokens (pinned), each row over 16 blocks of 8 heads: 128 blocks where one row per block makes 8",
        [rope(64, style="gptj", source="cache", max_position=8192)],
        hidden=24576,
        head_dim=192,
        tokens=8,
        schedule={"row_split": 16},
    ),
    "qk_norm_rope_cache_split4": case(
        "QK-norm per head (rstd per head, from each part's first head on) → neox RoPE of the whole head from the cache, 4 parts of 8 heads",
        [{"kind": "rmsnorm", "over": "head"}, rope(128, source="cache", max_position=4096)],
        head_dim=128,
        outputs={"rstd": True},
        schedule={"row_split": 4},
    ),
    "rope_quant_column_split4": case(
        "per-head gptj RoPE → group-128 quant with column-major scales, 4 parts: each part's scales from its first group on",
        [rope(64, style="gptj"), quant(128, scale_layout="column")],
        "float16",
        head_dim=128,
        schedule={"row_split": 4},
    ),
    "head_norm_padded_split2": case(
        "a padded part: 20 heads of 64 in 2 parts of 640 columns, each padded to 1024 (64 threads × 8): copies masked at the part",
        [{"kind": "rmsnorm", "over": "head"}, rope(64)],
        hidden=1280,
        head_dim=64,
        outputs={"rstd": True},
        schedule={"row_split": 2, "threads": 64},
    ),
    "add_rescale_quant_padded_split2": case(
        "residual add → rescale with a weight → group-8 quant, column scales, 2 parts of 1000 padded to 1024: every load and store masked at the part",
        [ADD, rescale(0.5, weight=True), quant(8, scale_layout="column")],
        hidden=2000,
        schedule={"row_split": 2},
    ),
    # The planner's own splits for few tokens of rows no op normalises: 1 KB parts up to 8 tokens, 3 KB to 64.
    "fine_split_add_rescale_heads": case(
        "residual add → rescale in heads of 128: 28 parts of 512 columns up to 8 tokens, 8 of 1792 from 9 to 64",
        [ADD, rescale(0.125)],
        hidden=14336,
        head_dim=128,
    ),
    "fine_split_fp32_quant_g16": case(
        "float32 → group-16 quant with column-major scales: parts of 256 columns up to 8 tokens, of 768 from 9 to 64",
        [quant(16, scale_layout="column")],
        "float32",
        hidden=6144,
    ),
    "fine_split_rope_quant_y": case(
        "neox RoPE 64 in heads of 128 → group-128 quant writing Y: fp16 parts of 512 columns up to 8 tokens",
        [rope(64), quant(128)],
        "float16",
        hidden=8192,
        head_dim=128,
        outputs={"y": True},
    ),
    # A random-spec hunt (session 15) found split-K taking 16-byte vectors here: rows start every 1001
    # elements, so TileLang fell back to scalar accesses and the kernel failed its CUDA checks.
    "rms_splitk_odd_width": case(
        "split-K over an odd width (1001 float32 columns, 256-wide chunks): 4-byte accesses",
        [RMS],
        "float32",
        1001,
        schedule={"variant": "splitk", "blk_k": 256},
    ),
    # The planner's stream for wide rows (schedule.wide_stream). Passed on the H200 (2026-12-02), sanitizers too.
    "ln_rope_quant_fp32_7168_wide_stream": case(
        "fp32 LayerNorm → RoPE → FP8 g128 over 7168 columns, streamed by the planner on 128 threads: a 56 KB ring, "
        "past the 48 KB a launch gets without raising the kernel's limit",
        [LN, rope(64), quant(128)],
        "float32",
        7168,
        outputs={"y": False},
    ),
    "rms_cache_rope_bf16_6144_stream": case(
        "RMSNorm → cache RoPE over 6144 bf16 columns as the stream the planner took before perf/probe27 (now a "
        "fragment program on four warps): the cache row gathered at each token's position through the ring",
        [RMS, rope(64, source="cache", max_position=32768)],
        "bfloat16",
        6144,
        schedule={"variant": "stream", "threads": 128},
    ),
    # Rows padded rather than held in two vectors a thread (schedule.MIN_GOOD_VECTORS_PER_THREAD).
    "qk_norm_cache_rope_bf16_6656_padded": case(
        "QK-norm → cache RoPE over 52 heads of 128, the row padded to 7168 on 128 threads (whole-row 416 threads "
        "would hold two vectors each): four masked heads in the last tile",
        [{"kind": "rmsnorm", "over": "head"}, rope(128, source="cache", max_position=32768)],
        "bfloat16",
        6656,
        head_dim=128,
    ),
    "rms_rope_quant_fp16_6656_padded": case(
        "RMSNorm → RoPE → per-token FP8 over 6656 fp16 columns padded to 7168: the masked tail outside the amax",
        [RMS, rope(64), quant()],
        "float16",
        6656,
        outputs={"y": False},
    ),
    # Rows that gather a cache row: the planner's fragment programs (schedule.wide_stream leaves them, perf/probe70),
    # the stream with the cache row through its ring as asked, the cache row read where used
    # (schedule._gathered_where_used; perf/probe32–36). Passed on the H200 (2026-12-03, ce59540); memcheck ran
    # the streams and the 4608 fragment program.
    "rms_cache_rope_g32_fp32_6144_fragment": case(
        "fp32 RMSNorm → neox cache RoPE tail 64 → group-32 FP8 over 6144 columns, the planner's fragment program: "
        "the cache row staged on every thread, the amax after it",
        [RMS, rope(64, source="cache", max_position=32768), quant(32)],
        "float32",
        6144,
        outputs={"y": False},
    ),
    "rms_cache_rope_g32_fp32_6144_stream": case(
        "the same chain streamed as asked on 256 threads: the cache row through the ring, the amax after it",
        [RMS, rope(64, source="cache", max_position=32768), quant(32)],
        "float32",
        6144,
        outputs={"y": False},
        schedule={"variant": "stream", "threads": 256},
    ),
    "rms_gptj_cache_rope_g128_bf16_5120_where_used": case(
        "bf16 RMSNorm → gptj cache RoPE head 64 → group-128 FP8 over 5120 columns on four warps, the cache row "
        "read where used before the amax",
        [RMS, rope(64, span="head", style="gptj", source="cache", max_position=32768), quant(128)],
        "bfloat16",
        5120,
        outputs={"y": False},
    ),
    "qk_norm_neox64_cache_rope_bf16_4608_fragment": case(
        "QK-norm → neox cache RoPE over 72 heads of 64 (partners four lanes apart), the planner's fragment program on 192 threads",
        [{"kind": "rmsnorm", "over": "head"}, rope(64, span="head", source="cache", max_position=32768)],
        "bfloat16",
        4608,
        head_dim=64,
    ),
    # schedule._overflowing_stream: the staged weight and bias overflow the few-warps bound's registers. Passed on
    # the H200 (2026-12-03, ce59540), memcheck and racecheck too.
    "ln_neox64_cache_rope_f16_7168_stream": case(
        "LayerNorm over the row → neox cache RoPE over 112 heads of 64, streamed by the planner on 128 threads: "
        "the row's values and its staged weight and bias overflow the registers of four warps under a bound",
        [{"kind": "layernorm"}, rope(64, span="head", source="cache", max_position=32768)],
        "float16",
        7168,
        head_dim=64,
    ),
    # schedule.gathering_row's launch bound for four-lane neox over whole heads (FEW_WARPS_BOUNDS).
    "qk_norm_neox64_cache_rope_f16_7168_bounded": case(
        "QK-norm → neox cache RoPE over 112 heads of 64 (partners four lanes apart) on four warps under the "
        "planner's launch bound of six blocks an SM (56 values a thread squeezed to 80 registers)",
        [{"kind": "rmsnorm", "over": "head"}, rope(64, span="head", source="cache", max_position=32768)],
        "float16",
        7168,
        head_dim=64,
    ),
    # schedule._few_warps_bound where the staged weight and bias overflow the bound's registers and the row
    # cannot stream (16-byte vectors do not split 6656 columns evenly over four warps).
    "ln_neox64_cache_rope_f16_6656_four_blocks": case(
        "LayerNorm over the row → neox cache RoPE over 104 heads of 64 on four warps, the row padded to 7168, under "
        "the four blocks an SM whose registers hold its values and its staged weight and bias",
        [{"kind": "layernorm"}, rope(64, span="head", source="cache", max_position=32768)],
        "float16",
        6656,
        head_dim=64,
    ),
    # schedule.wide_reread: the row read in tiles, the norm's sums from a pass of their own, each tile
    # finished from the words that pass loaded (four tiles: held); the RoPE's tail span in the last tile,
    # group scales stored tile by tile.
    "rms_gptj_ue8m0_g64_f16_16384_reread": case(
        "RMSNorm → GPT-J RoPE tail 64 → FP8 group 64 ue8m0 over 16384 fp16 columns, read in four tiles of 512 threads, held",
        [RMS, rope(64, style="gptj"), quant(64, scale="ue8m0")],
        "float16",
        16384,
        outputs={"y": False, "rstd": True},
    ),
    # The reread hint on LayerNorm: the mean and the centred squares from two passes over the tiles, each
    # tile read again to finish it (six tiles: more than are held).
    "ln_neox128_f16_12288_reread": case(
        "LayerNorm → neox RoPE tail 128 over 12288 fp16 columns read in six tiles of 256 threads (the variant hint), mean and rstd written",
        [LN, rope(128)],
        "float16",
        12288,
        outputs={"mean": True, "rstd": True},
        schedule={"variant": "reread"},
    ),
    # schedule.wide_reread on a 16-bit LayerNorm row: 256 threads, three tiles held, Y written beside the
    # RoPE's head span in the first tile.
    "ln_neox64_head_bf16_6144_reread_held": case(
        "LayerNorm → neox RoPE head 64 over 6144 bf16 columns, read in three tiles of 256 threads and held, Y and rstd written",
        [LN, rope(64, span="head")],
        "bfloat16",
        6144,
        outputs={"rstd": True},
    ),
    # schedule.narrow_row: rows narrower than a warp's 16-byte vectors share warps, each on a power-of-two
    # group of lanes whose shuffles end its reductions (no exchange, no barrier).
    "add_rms_g32_bf16_64_shared_warps": case(
        "x + residual → RMSNorm → FP8 group 32 over 64 bf16 columns, 16 rows a block on four lanes each, residual_out and rstd written",
        [ADD, RMS, quant(32)],
        "bfloat16",
        64,
        outputs={"y": False, "residual": True, "rstd": True},
    ),
    "ln_neox32_f32_96_shared_warps": case(
        "LayerNorm → neox RoPE tail 32 over 96 float32 columns, four rows a block on eight lanes each, mean and rstd written",
        [LN, rope(32)],
        "float32",
        96,
        outputs={"mean": True, "rstd": True},
    ),
    "qk_norm_cache_rope_token_f16_128_shared_warps": case(
        "per-head RMSNorm → neox cache RoPE → per-token FP8 over two heads of 64 in 128 fp16 columns, rows sharing warps",
        [{"kind": "rmsnorm", "over": "head"}, rope(64, span="head", source="cache", max_position=4096), quant()],
        "float16",
        128,
        head_dim=64,
    ),
    # The reread hint on a chain whose statistics all lie within a tile (a norm over each head): one pass
    # over the tiles, each loaded and finished in turn (cuda_checks.tile_loops wanted a statistics pass here
    # and failed the build; perf/probe73's tune candidates found it). Passed on the H200 (2026-12-03, 3999bdb),
    # memcheck and racecheck too.
    "qk_norm_neox64_cache_rope_bf16_4608_reread": case(
        "QK-norm → neox cache RoPE over 72 heads of 64 read in three tiles of 192 threads (the variant hint): no "
        "statistics pass, each tile finished as it is loaded",
        [{"kind": "rmsnorm", "over": "head"}, rope(64, span="head", source="cache", max_position=32768)],
        "bfloat16",
        4608,
        head_dim=64,
        schedule={"variant": "reread", "threads": 192},
    ),
    # The stream with its x ring in registers (schedule hint ring = "registers"): the next row loaded into each
    # thread's own columns while this one is reduced. Passed the GPU matrix and racecheck on the H200
    # (2026-12-04, 62c1987; perf/probe94).
    "stream_registers_ln_e5m2_2880": case(
        "a register ring over a padded row: 360 vectors over 128 threads, five blocks an SM, no shared ring at all",
        [LN, quant(fp8="e5m2")],
        hidden=2880,
        outputs={"y": False},
        schedule={"variant": "stream", "threads": 128, "ring": "registers", "blocks_per_sm": 5},
    ),
    "stream_registers_rope_quant_y": case(
        "a register ring beside cos/sin's two-slot shared ring, Y written, group 128",
        [RMS, rope(64), quant(128)],
        "float16",
        schedule={"variant": "stream", "ring": "registers"},
    ),
    "stream_registers_add_fp32": case(
        "a register ring for x while the residual is read in place, float32, residual_out written",
        [ADD, RMS, quant()],
        "float32",
        hidden=2048,
        schedule={"variant": "stream", "ring": "registers"},
    ),
    # Rows that share their threads (schedule hint rows_share_threads; the GPU matrix, memcheck and racecheck
    # passed them on an H100 in session 52): each thread holds the same columns of every row of its block, so
    # the per-column inputs are staged once for all of them and the rows' reductions run side by side. Odd
    # token counts leave the last block with fewer rows than block_m.
    "shared_rows_ln_e5m2_2880": case(
        "two padded rows on the same 128 threads: weight and bias staged once, three exchanges for both rows",
        [LN, quant(fp8="e5m2")],
        hidden=2880,
        outputs={"y": False},
        schedule={"variant": "fragment", "threads": 128, "block_m": 2, "rows_share_threads": True},
    ),
    "shared_rows_rescale_g64_2880": case(
        "four rows on 128 threads, a rescale by a second weight, group amaxes of 64 columns per row",
        [RMS, {"kind": "rescale", "factor": 0.125, "weight": True}, quant(64)],
        "float16",
        hidden=2880,
        outputs={"y": False},
        schedule={"block_m": 4, "rows_share_threads": True},
    ),
    "shared_rows_rope_quant_y": case(
        "two rows on the same threads through RoPE's pairs (tail 64, neox) and group 128 scales, Y written",
        [RMS, rope(64), quant(128)],
        schedule={"block_m": 2, "rows_share_threads": True, "threads": 256},
    ),
    "shared_rows_qk_norm_cache_rope": case(
        "per-head RMSNorm → cache RoPE (gptj) on two rows of heads of 128: each row's cos/sin row gathered at its position",
        [{"kind": "rmsnorm", "over": "head"}, rope(128, style="gptj", source="cache", max_position=8192)],
        hidden=2048,
        head_dim=128,
        schedule={"block_m": 2, "rows_share_threads": True},
    ),
    "shared_rows_add_ln_stats_fp32": case(
        "residual added and written back, LayerNorm writing mean and rstd, four float32 rows on 256 threads",
        [ADD, LN],
        "float32",
        hidden=1536,
        outputs={"residual": True, "mean": True, "rstd": True},
        schedule={"block_m": 4, "rows_share_threads": True, "threads": 256},
    ),
    "shared_rows_column_scales_g32": case(
        "column-major scales in groups of 32 from four rows on the same threads: each group's four scales adjacent",
        [RMS, quant(32, scale_layout="column")],
        hidden=3072,
        outputs={"y": False},
        schedule={"block_m": 4, "rows_share_threads": True},
    ),
}

# Compiled and CUDA-checked on the CPU, not yet run on a GPU; the GPU matrix runs them with CASES, and
# they join CASES once it has passed them (session 10's eleven joined after 61 GPU runs passed).
PENDING_GPU_CASES: dict = {}


# Two routes as a tuning file gives them: another thread count, block_m and prefetch on each side of 64
# tokens, for chains with weight, cos/sin, bias and group scales.
ROUTED = (
    TunedRoute(1, 64, {"variant": "fragment", "threads": 512, "block_m": 1, "blk_k": "auto", "prefetch": False}, "test"),
    TunedRoute(65, None, {"variant": "fragment", "threads": 256, "block_m": 2, "blk_k": "auto", "prefetch": True}, "test"),
)
ROUTED_CASES = ("quant_g128_bf16_7168", "rope_tail_neox_64", "ln_fp16_4096")


def spec_for(name: str) -> dict:
    purpose, spec = {**CASES, **PENDING_GPU_CASES}[name]
    return {"name": name, **spec}


def planner_routed_cases() -> list[str]:
    """The cases the planner itself gives several routes (split rows for few tokens, two or four warps a row,
    one row per block below the 1025 tokens from which it streams or puts several short rows in a block)."""
    return [name for name in sorted(CASES) if len(plan(KernelSpec.model_validate(spec_for(name)), name).routes) > 1]


# The committed examples: the seed's seven kernels, each in specs/<name>.toml and tuned in tuning.json.
# Any other spec in specs/ is a user's (the README's tutorial adds one): it builds with the planner's
# own schedule, and the suite must stay green with it there.
EXAMPLE_KERNELS = (
    "layer_norm_fwd",
    "rms_norm",
    "rms_norm_naive_row_per_block",
    "rms_norm_rope_fused",
    "rms_norm_rope_quant_fp8_only",
    "rms_norm_rope_quant_fused",
    "rms_norm_splitk",
)
