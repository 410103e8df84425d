"""Specs nobody wrote by hand, through the path `fusegen build` takes (TOML text, parse, plan). Most are
drawn valid — every key of the spec reference in use, every value from its allowed set, the rules across
keys respected — and each of those must be accepted; the planner may refuse a hint combination the SM cannot hold, but seldom, and only
naming a schedule key. The rest break exactly one rule, and each must be refused with a SpecError naming
that rule's key. A few accepted ones are compiled for sm_90a and must pass the CUDA checks, and a dozen
have their generated reference checked against the float64 oracle.
(A wider run of the old version found the RoPE vector rule; one of 700 draws, session 15, split-K's vectors at odd
widths and a threads hint refused for the wrong reason; one of 600, session 16, 2³¹ − 1 pinned tokens at block_m 2,
which TileLang could not compile.)

Each run draws afresh; the seed is in every failure message, and FUSEGEN_RANDOM_SPECS_SEED replays it."""

from __future__ import annotations

import logging
import math
import os
import random

from test_injection import dump
from test_reference_oracle import assert_reference_matches_oracle

from fusegen.build import plan_spec
from fusegen.checking import cuda_check_failures
from fusegen.errors import SpecError
from fusegen.spec import KernelSpec, parse_spec

DRAWS = 80
VIOLATIONS = 20  # of the draws, this many break one rule each
COMPILED = 4  # accepted draws compiled for sm_90a (each takes seconds)
REFERENCED = 12  # accepted draws whose reference is checked against the float64 oracle
CACHED_VALUES = 1 << 22  # a drawn cos_sin_cache is cut to this many values for the reference check
# The planner refuses a valid draw only where its hints ask more of an SM than it has (registers, shared
# memory, whole-vector copies per thread): the spec reference states those limits only loosely.
MIN_PLANNED = 0.8

DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4}
# Powers of two, model widths (Gemma's 3840, MLA's kv_a 576 and q_b 24576), and widths the planner must
# pad (1000, 4000) or access by scalars (1001).
HIDDENS = (16, 64, 128, 256, 512, 576, 640, 768, 1000, 1001, 1024, 1536, 2048, 3072, 3840, 4000, 4096, 5120, 7168, 8192, 16384, 24576)
# Models' heads first (Llama 128, Gemma 256, MLA q_b 192 and kv 576, Phi 80, 96), then any that divides.
MODEL_HEAD_DIMS = (64, 80, 96, 128, 192, 256, 576)
ROPE_DIMS = (2, 8, 16, 32, 64, 96, 128, 256)
GROUP_SIZES = (8, 16, 32, 64, 128, 256)
RING_BYTES_LIMIT = 227 * 1024  # README: a stream ring of at most 227 KB of shared memory, an SM's
NAIVE_BYTES_LIMIT = 48 * 1024  # README: naive stages a row of at most 48 KB in shared memory
MAX_ROW_SPLIT = 65535  # README: row_split is a divisor of hidden up to 65535
MAX_POSITION = 1 << 24  # README: max_position 1 … 2²⁴, max_position · rope_dim < 2³¹
NORMS = ("rmsnorm", "layernorm")
# The kinds an op of each kind must follow where both are in the chain (README: add_residual → norm →
# rope → quant_fp8, rescale anywhere after the norm and before quant_fp8).
AFTER = {
    "add_residual": (),
    "rmsnorm": ("add_residual",),
    "layernorm": ("add_residual",),
    "rescale": ("add_residual", *NORMS),
    "rope": ("add_residual", *NORMS, "rescale"),
    "quant_fp8": ("add_residual", *NORMS, "rescale", "rope"),
}


def head_dims(hidden: int) -> list[int]:
    """README: head_dim is a multiple of 8 that divides hidden."""
    return [d for d in range(8, hidden + 1, 8) if hidden % d == 0]


def draw_head_dim(rng: random.Random, hidden: int) -> int | None:
    fitting = head_dims(hidden)
    if not fitting or rng.random() >= 0.3:
        return None
    models = [d for d in MODEL_HEAD_DIMS if d in fitting]
    return rng.choice(models if models and rng.random() < 0.7 else fitting)


def draw_columns(rng: random.Random, hidden: int) -> list[int]:
    """README: [lo, hi), 0 ≤ lo < hi ≤ hidden, multiples of 8 (hi may be hidden)."""
    ends = [*range(8, hidden + 1, 8), *([hidden] if hidden % 8 else [])]
    hi = rng.choice(ends)
    return [rng.choice(range(0, hi, 8)), hi]


def per_head_fits(head_dim: int, hidden: int, elem: int) -> bool:
    """README (head_dim error): a per-head norm pads the row to whole heads and whole row tiles — a power of
    two of threads from 32, or a count of warps that covers the row in 16-byte vectors and whose tiles hold
    whole heads, × a vector of 1, 2, 4 or 8 columns (at most 16 bytes) — at most 64 values a thread."""
    vectors = hidden * elem // 16 if hidden * elem % 16 == 0 else 0
    for threads in (t for t in range(32, 1025, 32) if t & (t - 1) == 0 or (vectors and vectors % t == 0)):
        for vector in (v for v in (1, 2, 4, 8) if v * elem <= 16):
            tile = threads * vector
            if tile % head_dim and threads & (threads - 1):
                continue
            step = math.lcm(tile, head_dim)
            if -(-hidden // step) * step // threads <= 64:
                return True
    return False


def draw_norm(rng: random.Random, kind: str, hidden: int, head_dim: int | None, dtype: str, whole_row: bool = False) -> dict:
    """A `kind` norm; over the whole row if `whole_row`, else sometimes per head or over a column range."""
    op = {"kind": kind, "weight": rng.random() < 0.8}
    if kind == "rmsnorm":
        op["eps"] = rng.choice([1e-6, 1e-5, 1e-2])
        if op["weight"] and rng.random() < 0.3:
            op["weight_offset"] = rng.choice([1.0, 0.5, -1.0, 1e-3])  # Gemma's (1 + w), and others
    else:
        op["bias"] = rng.random() < 0.7
        if rng.random() < 0.3:
            op["eps"] = rng.choice([1e-6, 1e-5, 1e-2])
    if whole_row:
        return op
    if head_dim and per_head_fits(head_dim, hidden, DTYPE_BYTES[dtype]) and rng.random() < 0.6:
        op["over"] = "head"
    elif not head_dim and rng.random() < 0.25:
        op["columns"] = draw_columns(rng, hidden)
    return op


def draw_rope(rng: random.Random, hidden: int, head_dim: int | None) -> list[dict]:
    dims = [d for d in ROPE_DIMS if d <= (head_dim or hidden)] + ([head_dim] if head_dim and head_dim % 2 == 0 else [])
    op = {"kind": "rope", "rope_dim": rng.choice(dims), "span": rng.choice(["tail", "head"]), "style": rng.choice(["neox", "gptj"])}
    if rng.random() < 0.4:
        op["source"] = "cache"
        most = min(MAX_POSITION, (2**31 - 1) // op["rope_dim"])
        op["max_position"] = rng.choice([1, 64, 4096, 163840, most])
    return [op]


def draw_rescale(rng: random.Random) -> dict:
    op = {"kind": "rescale", "factor": rng.choice([0.125, 128**-0.5, 2.0, -1.5, 64.0, 1.0])}
    if op["factor"] == 1.0 or rng.random() < 0.4:
        op["weight"] = True  # README: factor 1.0 needs weight
    return op


def draw_chain(rng: random.Random, hidden: int, head_dim: int | None, dtype: str) -> list[dict]:
    if rng.random() < 0.1:
        # The one chain the whole-kernel variants (naive, splitk) take, otherwise a rare draw.
        return [draw_norm(rng, "rmsnorm", hidden, head_dim, dtype, whole_row=True)]
    residual = [{"kind": "add_residual"}] if rng.random() < 0.3 else []
    kind = rng.choice([None, *NORMS])
    norm = [draw_norm(rng, kind, hidden, head_dim, dtype)] if kind else []
    rope = draw_rope(rng, hidden, head_dim) if rng.random() < 0.6 else []
    quant = []
    if rng.random() < 0.6:
        groups = ["token", *(g for g in GROUP_SIZES if hidden % g == 0)]
        quant = [
            {
                "kind": "quant_fp8",
                "group_size": rng.choice(groups),
                "fp8": rng.choice(["e4m3fn", "e5m2"]),
                "scale": rng.choice(["fp32", "ue8m0"]),
            }
        ]
        if rng.random() < 0.3:
            quant[0]["scale_layout"] = "column"
        if rng.random() < 0.2:
            quant[0]["amax_floor"] = rng.choice([1e-6, 1e-3, 1.0])
    middle = rope
    if rng.random() < 0.3:  # before or after RoPE: README allows either
        middle = [draw_rescale(rng), *rope] if rng.random() < 0.5 else [*rope, draw_rescale(rng)]
    return residual + norm + middle + quant or [{"kind": "rmsnorm"}]


def draw_outputs(rng: random.Random, ops: list[dict]) -> dict:
    kinds = [op["kind"] for op in ops]
    changes_row = any(kind != "quant_fp8" for kind in kinds)
    outputs = {
        "mean": "layernorm" in kinds and rng.random() < 0.4,
        "rstd": any(kind in NORMS for kind in kinds) and rng.random() < 0.4,
    }
    if "add_residual" in kinds and rng.random() < 0.7:
        outputs["residual"] = rng.random() < 0.5
    if not changes_row:
        outputs["y"] = False  # Y would be a copy of x
    elif "quant_fp8" in kinds or outputs["mean"] or outputs["rstd"] or outputs.get("residual", "add_residual" in kinds):
        outputs["y"] = rng.random() < 0.5  # something else leaves the kernel without Y
    return outputs


def needs_whole_row(op: dict, head_dim: int | None) -> bool:
    """README, row_split: a norm over the row or a column range, a per-token quant_fp8, a RoPE without head_dim."""
    kind = op["kind"]
    return (
        (kind in NORMS and op.get("over", "row") == "row")
        or (kind == "quant_fp8" and op["group_size"] == "token")
        or (kind == "rope" and head_dim is None)
    )


def row_splits(spec: dict) -> list[int]:
    """The splits the README allows this chain: none where an op needs the whole row; else divisors of hidden
    (up to 65535) whose part is a whole number of heads and of every quantisation group."""
    head_dim = spec.get("head_dim")
    if any(needs_whole_row(op, head_dim) for op in spec["op"]):
        return []
    unit = math.lcm(head_dim or 1, *(op["group_size"] for op in spec["op"] if op["kind"] == "quant_fp8"))
    hidden = spec["hidden"]
    return [d for d in range(2, min(hidden, MAX_ROW_SPLIT) + 1) if hidden % d == 0 and hidden // d % unit == 0]


def whole_row_rmsnorm(op: dict) -> bool:
    return op["kind"] == "rmsnorm" and op.get("over", "row") == "row" and "columns" not in op


def draw_schedule(rng: random.Random, spec: dict) -> dict:
    ops = spec["op"]
    row_bytes = spec["hidden"] * DTYPE_BYTES[spec["dtype"]]
    variants = ["auto", "auto", "fragment"]
    # README: a stream ring copies vectors of at least 4 bytes (an even hidden for 2-byte dtypes), padded
    # where the row does not split into the threads' whole vectors. And room for two rows and their cos/sin.
    if row_bytes % 4 == 0 and 2 * row_bytes <= RING_BYTES_LIMIT // 2:
        variants.append("stream")
    # README: naive and splitk are for a chain of one rmsnorm over whole rows.
    if len(ops) == 1 and whole_row_rmsnorm(ops[0]):
        variants += ["naive", "splitk"] if row_bytes <= NAIVE_BYTES_LIMIT else ["splitk"]
    variant = rng.choice(variants)
    schedule = {"variant": variant}
    # Threads that leave each of them at most 16 of the row's values: well within the register budget.
    fitting = [t for t in (32, 64, 128, 256, 512, 1024) if spec["hidden"] <= 16 * t] or [1024]
    if rng.random() < 0.3:
        schedule["threads"] = rng.choice(fitting)
    if variant != "stream" and rng.random() < 0.3:
        # README: with block_m > 1 threads are a multiple of 32 × block_m.
        schedule["block_m"] = rng.choice([1, 2] if spec["hidden"] <= 4096 and schedule.get("threads", 64) % 64 == 0 else [1])
    if variant in ("auto", "fragment") and schedule.get("block_m", 1) > 1 and rng.random() < 0.5:
        # README: rows_share_threads puts a fragment block's rows on all of its threads.
        schedule["rows_share_threads"] = True
    if variant in ("auto", "fragment", "stream"):
        schedule["prefetch"] = rng.choice(["auto", True, False])
    if variant == "fragment" and rng.random() < 0.3:
        # README: fragment's launch bound takes 1 up to 2048 ÷ threads (at most 16).
        schedule["blocks_per_sm"] = rng.randint(1, min(16, 2048 // schedule.get("threads", 1024)))
    elif variant == "stream" and rng.random() < 0.2:
        schedule["blocks_per_sm"] = 1  # every ring that fits an SM fits it once
    # README: rmsnorm over whole rows → [rescale | rope] → per-token quant_fp8, on a variant that holds the row in registers.
    norm = next((k for k, op in enumerate(ops) if op["kind"] in NORMS), None)
    joint_possible = (
        norm is not None
        and whole_row_rmsnorm(ops[norm])
        and ops[-1]["kind"] == "quant_fp8"
        and ops[-1]["group_size"] == "token"
        and all(op["kind"] in ("rescale", "rope") for op in ops[norm + 1 : -1])
    )
    if joint_possible and variant in ("auto", "fragment", "stream"):
        schedule["joint_reduction"] = rng.choice(["auto", True, False])
    if variant == "stream":
        # README: ring = "registers" holds x one row ahead, beside a two-slot ring for per-token side inputs.
        schedule["ring"] = rng.choice(["auto", "shared", "registers"])
        deeper = [3] if 3 * row_bytes <= RING_BYTES_LIMIT // 2 and schedule["ring"] != "registers" else []
        schedule["ring_slots"] = rng.choice(["auto", 2] + deeper)
    if variant == "splitk" and rng.random() < 0.5:
        threads = schedule.get("threads", 256)
        chunks = [k for k in (256, 512, 1024, 2048) if k <= spec["hidden"] and k % threads == 0 and k // threads <= 16]
        if chunks:
            schedule["blk_k"] = rng.choice(chunks)
    splits = row_splits(spec)
    if variant in ("auto", "fragment") and schedule.get("block_m", 1) == 1 and splits and rng.random() < 0.6:
        schedule["row_split"] = rng.choice(splits)
    return schedule


def draw_valid(rng: random.Random) -> dict:
    hidden = rng.choice(HIDDENS)
    spec = {"name": "random_spec", "dtype": rng.choice(list(DTYPE_BYTES)), "hidden": hidden}
    if head_dim := draw_head_dim(rng, hidden):
        spec["head_dim"] = head_dim
    spec["op"] = draw_chain(rng, hidden, head_dim, spec["dtype"])
    spec["outputs"] = draw_outputs(rng, spec["op"])
    spec["schedule"] = draw_schedule(rng, spec)
    if rng.random() < 0.15:
        # README: a stream program counts at most 2³¹ − (ring_slots − 1) · blocks_per_sm · 144 tokens, and a
        # count rounded up to a multiple of block_m stays within 2³¹ − 1.
        past_int32 = spec["schedule"]["variant"] == "stream" or spec["schedule"].get("block_m", 1) > 1
        counts = [1, 3, 4096, 1 << 30] + ([2**31 - 1] if not past_int32 else [])
        # README (quant_fp8): column-major scales of a pinned count are indexed in int32.
        for op in spec["op"]:
            if op["kind"] == "quant_fp8" and op.get("scale_layout") == "column":
                groups = 1 if op["group_size"] == "token" else hidden // op["group_size"]
                counts = [c for c in counts if c <= 4 * ((2**31 - 1) // (4 * groups))]
        spec["tokens"] = rng.choice(counts)
    return spec


def index_of(spec: dict, kind: str, new: dict | None = None) -> int:
    """The index of the spec's `kind` op (a norm: either norm), inserted as `new` (default: the kind
    alone) where the chain has none, after the kinds it follows."""
    kinds = NORMS if kind in NORMS else (kind,)
    found = next((i for i, op in enumerate(spec["op"]) if op["kind"] in kinds), None)
    if found is not None:
        return found
    at = sum(op["kind"] in AFTER[kind] for op in spec["op"])
    spec["op"].insert(at, new or {"kind": kind})
    return at


def with_head_dim(spec: dict) -> int:
    """Gives the spec a valid head_dim (hidden 1001 has none: it becomes 1024, which every op of the
    chain still fits) and returns it; a norm's column range, which head_dim refuses, goes."""
    if "head_dim" not in spec:
        if not head_dims(spec["hidden"]):
            spec["hidden"] = 1024
        spec["head_dim"] = max(d for d in head_dims(spec["hidden"]) if d <= 256)
    for op in spec["op"]:
        op.pop("columns", None)
    return spec["head_dim"]


def odd_rope_dim(rng, spec):
    i = index_of(spec, "rope", {"kind": "rope", "rope_dim": 2})
    spec["op"][i]["rope_dim"] = rng.choice([d for d in (1, 3, 5, 7, 15) if d <= spec["hidden"]])
    return f"op[{i}].rope_dim"


def rope_dim_over_hidden(rng, spec):
    i = index_of(spec, "rope", {"kind": "rope", "rope_dim": 2})
    spec["op"][i]["rope_dim"] = spec["hidden"] + 2 * rng.randint(1, 64) - (spec["hidden"] % 2)
    return f"op[{i}].rope_dim"


def rope_dim_over_head_dim(rng, spec):
    head_dim = with_head_dim(spec)
    i = index_of(spec, "rope", {"kind": "rope", "rope_dim": 2})
    spec["op"][i]["rope_dim"] = head_dim + 2 * rng.randint(1, 32)
    return f"op[{i}].rope_dim"


def cache_without_max_position(rng, spec):
    i = index_of(spec, "rope", {"kind": "rope", "rope_dim": 2})
    spec["op"][i]["source"] = "cache"
    spec["op"][i].pop("max_position", None)
    return f"op[{i}].max_position"


def max_position_without_cache(rng, spec):
    i = index_of(spec, "rope", {"kind": "rope", "rope_dim": 2})
    spec["op"][i]["max_position"] = rng.choice([1, 4096])
    spec["op"][i].pop("source", None)
    return f"op[{i}].max_position"


def max_position_out_of_range(rng, spec):
    i = index_of(spec, "rope", {"kind": "rope", "rope_dim": 2})
    rope = spec["op"][i]
    rope["source"] = "cache"
    # Past 2²⁴, or (rope_dim 128 or more) within it but past the cache's int32 element index.
    rope["max_position"] = rng.choice([0, MAX_POSITION + 1, *([(2**31 - 1) // rope["rope_dim"] + 1] if rope["rope_dim"] >= 128 else [])])
    return f"op[{i}].max_position"


def head_dim_not_dividing_hidden(rng, spec):
    spec["head_dim"] = rng.choice([d for d in (12, 20, 24, 40, 48, 100, 192, 200, 320, 576, 1000) if spec["hidden"] % d or d % 8])
    return "head_dim"


def head_without_head_dim(rng, spec):
    spec.pop("head_dim", None)
    i = index_of(spec, "rmsnorm")
    spec["op"][i]["over"] = "head"
    return f"op[{i}].over"


def columns_with_head_dim(rng, spec):
    with_head_dim(spec)
    i = index_of(spec, "rmsnorm")
    spec["op"][i].update(over="row", columns=draw_columns(rng, spec["hidden"]))
    return f"op[{i}].columns"


def columns_with_over_head(rng, spec):
    with_head_dim(spec)
    i = index_of(spec, "rmsnorm")
    spec["op"][i].update(over="head", columns=draw_columns(rng, spec["hidden"]))
    return f"op[{i}].columns"


def columns_out_of_range(rng, spec):
    spec.pop("head_dim", None)
    i = index_of(spec, "rmsnorm")
    hidden = spec["hidden"]
    spec["op"][i]["over"] = "row"
    spec["op"][i]["columns"] = rng.choice([[8, 8], [16, 8], [0, hidden + 8], [4, hidden], [0, 12], [-8, hidden]])
    return f"op[{i}].columns"


def as_rmsnorm(spec: dict) -> int:
    """The index of the chain's norm, made an rmsnorm (over the same columns) without a weight_offset."""
    i = index_of(spec, "rmsnorm")
    spec["op"][i] = {"kind": "rmsnorm", **{k: v for k, v in spec["op"][i].items() if k in ("eps", "weight", "over", "columns")}}
    return i


def weight_offset_without_weight(rng, spec):
    i = as_rmsnorm(spec)
    spec["op"][i].update(weight=False, weight_offset=rng.choice([1.0, -0.5]))
    return f"op[{i}].weight_offset"


def weight_offset_out_of_range(rng, spec):
    i = as_rmsnorm(spec)
    spec["op"][i].update(weight=True, weight_offset=rng.choice([1e-40, -1e-39, 70000.0]))
    return f"op[{i}].weight_offset"


def rescale_factor_of_no_effect(rng, spec):
    i = index_of(spec, "rescale", {"kind": "rescale", "factor": 2.0})
    # 1.0 without a weight leaves the row as it is; 0 and a subnormal factor zero it.
    spec["op"][i] = {"kind": "rescale", **rng.choice([{"factor": 1.0}, {"factor": 0.0, "weight": True}, {"factor": -1e-40}])}
    return f"op[{i}].factor"


def rescale_out_of_place(rng, spec):
    spec["op"] = [op for op in spec["op"] if op["kind"] != "rescale"]
    where = rng.choice(["before the norm", "after quant_fp8", "twice"])
    if where == "before the norm":
        i = index_of(spec, "rmsnorm")
        spec["op"].insert(i, {"kind": "rescale", "factor": 2.0})
        return f"op[{i + 1}].kind"  # the norm cannot follow it
    if where == "after quant_fp8":
        index_of(spec, "quant_fp8")
        spec["op"].append({"kind": "rescale", "factor": 2.0})
        return f"op[{len(spec['op']) - 1}].kind"
    i = index_of(spec, "rmsnorm")
    spec["op"][i + 1 : i + 1] = [{"kind": "rescale", "factor": 2.0}, {"kind": "rescale", "factor": 0.5}]
    return f"op[{i + 2}].kind"


def residual_add_not_first(rng, spec):
    spec["op"] = [op for op in spec["op"] if op["kind"] != "add_residual"] or [{"kind": "rmsnorm"}]
    i = rng.randint(1, len(spec["op"]))
    spec["op"].insert(i, {"kind": "add_residual"})
    return f"op[{i}].kind"


def residual_without_residual_add(rng, spec):
    spec["op"] = [op for op in spec["op"] if op["kind"] != "add_residual"] or [{"kind": "rmsnorm"}]
    if all(op["kind"] == "quant_fp8" for op in spec["op"]):
        spec["outputs"].pop("y", None)  # y = true of an unchanged row is a rule of its own, checked first
    spec["outputs"]["residual"] = True
    return "outputs.residual"


def nothing_written(rng, spec):
    spec["op"] = [op for op in spec["op"] if op["kind"] != "quant_fp8"] or [{"kind": "add_residual"}]
    spec["outputs"] = {"y": False, **({"residual": False} if spec["op"][0]["kind"] == "add_residual" else {})}
    return "outputs.y"


def row_split_against_the_chain(rng, spec):
    """A divisor of hidden the chain, variant or block_m refuses, or one that is no divisor at all."""
    hidden, schedule = spec["hidden"], spec["schedule"]
    splittable = schedule["variant"] in ("auto", "fragment") and schedule.get("block_m", 1) == 1
    allowed = row_splits(spec) if splittable else []
    refused = [d for d in range(2, min(hidden, MAX_ROW_SPLIT) + 1) if hidden % d == 0 and d not in allowed]
    schedule["row_split"] = rng.choice(refused or [hidden + 1])
    return "schedule.row_split"


def joint_without_its_chain(rng, spec):
    norm = next((op for op in spec["op"] if op["kind"] in NORMS), None)
    if norm is not None and whole_row_rmsnorm(norm):
        spec["op"] = [op for op in spec["op"] if op["kind"] != "quant_fp8"]  # nothing closes the joint span
        spec["outputs"].pop("y", None)
    spec["schedule"] = {"joint_reduction": True}
    return "schedule.joint_reduction"


def whole_kernel_variant_on_part_of_a_row(rng, spec):
    if "head_dim" in spec:
        norm = {"kind": "rmsnorm", "over": "head"}
    else:
        norm = {"kind": "rmsnorm", "columns": draw_columns(rng, spec["hidden"])}
    spec["op"], spec["outputs"], spec["schedule"] = [norm], {}, {"variant": rng.choice(["naive", "splitk"])}
    return "schedule.variant"


def tokens_out_of_range(rng, spec):
    spec["tokens"] = rng.choice([0, -3, 2**31, 1 << 40])
    return "tokens"


def tokens_past_the_stream_bound(rng, spec):
    spec.pop("head_dim", None)
    spec.update(hidden=rng.choice([256, 512, 1024]), tokens=2**31 - 1, op=[{"kind": "rmsnorm"}], outputs={})
    spec["schedule"] = {"variant": "stream"}
    return "tokens"


def block_m_rounding_tokens_past_int32(rng, spec):
    spec["schedule"] = {"variant": rng.choice(["auto", "fragment"]), "threads": 1024, "block_m": rng.choice([2, 4, 16])}
    spec["tokens"] = 2**31 - 1
    for op in spec["op"]:
        if op.get("scale_layout") == "column":
            op["scale_layout"] = "row"  # column-major scales of this count break a rule of their own
    return "schedule.block_m"


def blocks_per_sm_past_the_sm(rng, spec):
    spec["schedule"] = {"variant": "fragment", "blocks_per_sm": rng.choice([0, 17, 64])}
    return "schedule.blocks_per_sm"


def amax_floor_out_of_range(rng, spec):
    i = index_of(spec, "quant_fp8")
    # 1e-35 lies between e4m3fn's floor and e5m2's: refused for e5m2 only, by the rule across keys.
    spec["op"][i].update(rng.choice([{"amax_floor": 1e-40}, {"amax_floor": 1e-35, "fp8": "e5m2"}, {"amax_floor": 2.0}]))
    return f"op[{i}].amax_floor"


def group_not_dividing_hidden(rng, spec):
    i = index_of(spec, "quant_fp8")
    spec["op"][i]["group_size"] = rng.choice([g for g in range(8, 2 * spec["hidden"] + 9, 8) if spec["hidden"] % g])
    return f"op[{i}].group_size"


def ops_out_of_order(rng, spec):
    spec["op"] = [{"kind": "quant_fp8"}, rng.choice([{"kind": "rmsnorm"}, {"kind": "layernorm"}, {"kind": "rope", "rope_dim": 2}])]
    spec["outputs"], spec["schedule"] = {}, {}
    return "op[1].kind"


def threads_not_whole_warps(rng, spec):
    spec["schedule"]["threads"] = rng.choice([16, 48, 100, 1056, 2048])
    return "schedule.threads"


def block_m_not_a_power_of_two(rng, spec):
    spec["schedule"]["block_m"] = rng.choice([0, 3, 5, 12, 32])
    return "schedule.block_m"


def ring_slots_without_stream(rng, spec):
    spec["schedule"] = {"variant": rng.choice(["auto", "fragment"]), "ring_slots": rng.choice([2, 3, 4])}
    return "schedule.ring_slots"


def ring_without_stream(rng, spec):
    spec["schedule"] = {"variant": rng.choice(["fragment", "reread"]), "ring": rng.choice(["shared", "registers"])}
    return "schedule.ring"


def mean_without_layernorm(rng, spec):
    spec["op"] = [op for op in spec["op"] if op["kind"] != "layernorm"] or [{"kind": "rmsnorm"}]
    spec["outputs"] = {"mean": True}
    spec["schedule"] = {}
    return "outputs.mean"


def y_from_quant_alone(rng, spec):
    spec["op"] = [{"kind": "quant_fp8", "group_size": "token"}]
    spec["outputs"], spec["schedule"] = {"y": True}, {}
    return "outputs.y"


def hidden_out_of_range(rng, spec):
    spec["hidden"] = rng.choice([0, 8, 15, 65537, 1 << 20])
    return "hidden"


def eps_out_of_range(rng, spec):
    spec["op"] = [{"kind": rng.choice(["rmsnorm", "layernorm"]), "eps": rng.choice([0.0, -1e-6, 2.0, 1e-40])}]
    spec["outputs"], spec["schedule"] = {}, {}
    return "op[0].eps"


VIOLATIONS_BY_RULE = (
    odd_rope_dim,
    rope_dim_over_hidden,
    rope_dim_over_head_dim,
    cache_without_max_position,
    max_position_without_cache,
    max_position_out_of_range,
    head_dim_not_dividing_hidden,
    head_without_head_dim,
    columns_with_head_dim,
    columns_with_over_head,
    columns_out_of_range,
    weight_offset_without_weight,
    weight_offset_out_of_range,
    rescale_factor_of_no_effect,
    rescale_out_of_place,
    residual_add_not_first,
    residual_without_residual_add,
    nothing_written,
    group_not_dividing_hidden,
    amax_floor_out_of_range,
    ops_out_of_order,
    threads_not_whole_warps,
    block_m_not_a_power_of_two,
    ring_slots_without_stream,
    ring_without_stream,
    blocks_per_sm_past_the_sm,
    row_split_against_the_chain,
    joint_without_its_chain,
    whole_kernel_variant_on_part_of_a_row,
    mean_without_layernorm,
    y_from_quant_alone,
    hidden_out_of_range,
    tokens_out_of_range,
    tokens_past_the_stream_bound,
    block_m_rounding_tokens_past_int32,
    eps_out_of_range,
)


def build_path(spec: dict) -> KernelSpec:
    """What `fusegen build` does with a spec file: parse and check it, then plan it (SpecError for either)."""
    text = dump(spec)
    checked = parse_spec(text, "random.toml")
    plan_spec(checked, text, "random.toml")
    return checked


def for_reference(spec: dict) -> dict:
    """The draw as the reference check takes it: any token count, a cache the host can draw whole."""
    spec = {**{k: v for k, v in spec.items() if k != "tokens"}, "op": [dict(op) for op in spec["op"]]}
    for op in spec["op"]:
        if op.get("source") == "cache":
            op["max_position"] = max(1, min(op["max_position"], CACHED_VALUES // op["rope_dim"]))
    return spec


def seeded_draws() -> tuple[random.Random, str]:
    """A generator for this run's draws (FUSEGEN_RANDOM_SPECS_SEED's seed, else a fresh one) and the words a failure
    message carries to replay it."""
    seed = int(os.environ.get("FUSEGEN_RANDOM_SPECS_SEED") or int.from_bytes(os.urandom(4), "little"))
    replay = f"(seed {seed}: FUSEGEN_RANDOM_SPECS_SEED={seed} replays this run)"
    # Printed as well, since pytest shows a failed test's output: an error no assertion catches still names its seed.
    print(replay)
    return random.Random(seed), replay


def test_random_specs_valid_accepted_broken_refused_by_key(tmp_path):
    logging.getLogger("tilelang").setLevel(logging.WARNING)
    rng, replay = seeded_draws()
    broken_at = set(rng.sample(range(DRAWS), VIOLATIONS))
    planned, refused_by_planner, compiled = 0, [], 0
    for draw in range(DRAWS):
        spec = draw_valid(rng)
        if draw in broken_at:
            key = rng.choice(VIOLATIONS_BY_RULE)(rng, spec)
            try:
                build_path(spec)
            except SpecError as exc:
                assert exc.key == key, f"{spec} broke {key} but the error names {exc.key!r}: {exc} {replay}"
                continue
            raise AssertionError(f"{spec} breaks {key} but was accepted {replay}")
        try:
            checked = build_path(spec)
        except SpecError as exc:
            assert exc.key.startswith("schedule."), f"a valid draw was refused: {spec}: {exc} {replay}"
            refused_by_planner.append(str(exc))
            continue
        planned += 1
        if planned <= REFERENCED:
            try:
                assert_reference_matches_oracle(for_reference(spec), tmp_path / "references")
            except AssertionError as exc:
                raise AssertionError(f"{spec}: the reference is not the oracle's: {exc} {replay}") from exc
        if compiled < COMPILED:
            compiled += 1
            try:
                failures = cuda_check_failures(checked, tmp_path / f"draw{draw}")
            except Exception as exc:  # a valid spec that does not compile is a fusegen bug: say which draw
                raise AssertionError(f"{spec} did not compile: {exc} {replay}") from exc
            assert not failures, f"{spec}: {failures} {replay}"
    valid = DRAWS - VIOLATIONS
    assert planned >= MIN_PLANNED * valid, f"only {planned} of {valid} valid draws planned; refused: {refused_by_planner} {replay}"
    assert compiled == COMPILED, replay


TUNE_ROUND_TRIPS = 400


def accepted_draws(rng: random.Random, count: int):
    """(drawn spec, checked KernelSpec) for each of `count` draws, token counts dropped, that the build accepts."""
    for _ in range(count):
        spec = draw_valid(rng)
        spec.pop("tokens", None)
        try:
            yield spec, build_path(spec)
        except SpecError:
            continue


def test_the_planners_routes_given_back_as_tuning_winners_plan_to_themselves():
    """`fusegen tune` records each winner, the planner's own routes too, as the hints of a token range, and a
    tuned `fusegen build` plans each range from those hints: every route the planner makes must come back from
    its own hints (a splitk chunk the planner padded past the row was once refused as a hint, so the tuned build
    failed)."""
    from fusegen.plan import plan
    from fusegen.tune import _concrete
    from fusegen.tuning import TunedRoute

    rng, replay = seeded_draws()
    for spec, checked in accepted_draws(rng, TUNE_ROUND_TRIPS):
        routes = plan(checked, "random.toml").routes
        winners = tuple(TunedRoute(r.first_tokens, r.last_tokens, _concrete(r.schedule), "test") for r in routes)
        try:
            again = plan(checked, "random.toml", winners).routes
        except SpecError as exc:
            raise AssertionError(f"{spec}: its own routes {winners} refused as tuning winners: {exc} {replay}") from exc
        assert [_concrete(r.schedule) for r in again] == [w.hints for w in winners], f"{spec}: {winners} planned again as {again} {replay}"


TUNED_BUILDS = 150


def test_a_tuned_build_plans_what_tune_timed():
    """Whichever of `fusegen tune`'s candidates wins each token bucket, the tuned build plans, at the count each
    bucket was timed at, the program that won there: winners → tuning table → routes → plan."""
    from fusegen.plan import plan
    from fusegen.tune import _concrete, candidates, winners
    from fusegen.tuning import BUCKETS, Measured, TuningTable, routes_for, with_winners

    rng, replay = seeded_draws()
    for spec, checked in accepted_draws(rng, TUNED_BUILDS):
        found = candidates(checked)
        won = [rng.choice(found) for _ in BUCKETS]
        for candidate in found:
            candidate.median_us = {b.measured_at: 1.0 if candidate is winner else 10.0 for b, winner in zip(BUCKETS, won)}
        try:
            table = with_winners(TuningTable(), checked, "Test GPU", winners(checked, found, Measured()))
            tuned = plan(checked, "random.toml", routes_for(table, checked, "Test GPU"))
        except (SpecError, ValueError) as exc:
            raise AssertionError(f"{spec}: tune's winners {[c.hints for c in won]} refused: {exc} {replay}") from exc
        for bucket, winner in zip(BUCKETS, won):
            timed = _concrete(winner.plan.route_for(bucket.measured_at).schedule)
            built = _concrete(tuned.route_for(bucket.measured_at).schedule)
            assert built == timed, f"{spec} at {bucket.measured_at} tokens: tune timed {timed}, the tuned build plans {built} {replay}"
