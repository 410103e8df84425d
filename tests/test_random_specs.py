"""Specs nobody wrote by hand, through the path `fusegen build` takes (TOML text, parse, plan). Most are
drawn valid — every value from its allowed set, the rules across keys respected — and each of those
must be accepted; the planner may refuse a hint combination the SM cannot hold, but seldom, and only
naming a schedule key. The rest break exactly one rule, and each must be refused with a SpecError naming
that rule's key. A few accepted ones are compiled for sm_90a and must pass the CUDA checks.
(A wider run of the old version found the RoPE vector rule.)

Each run draws afresh; the seed is in every failure message, and FUSEGEN_RANDOM_SPECS_SEED replays it."""

from __future__ import annotations

import logging
import os
import random

from test_injection import dump

from fusegen.build import plan_spec
from fusegen.checking import cuda_check_failures
from fusegen.errors import SpecError
from fusegen.spec import KernelSpec, parse_spec

DRAWS = 60
VIOLATIONS = 12  # of the draws, this many break one rule each
COMPILED = 3  # accepted draws compiled for sm_90a (each takes seconds)
# The planner refuses a valid draw only where its hints ask more of an SM than it has (registers, shared
# memory, whole-vector copies per thread): the spec reference states those limits only loosely.
MIN_PLANNED = 0.8

DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4}
# Powers of two, model widths, and widths the planner must pad (1000, 4000) or access by scalars (1001).
HIDDENS = (16, 64, 128, 256, 512, 640, 768, 1000, 1001, 1024, 1536, 2048, 3072, 4000, 4096, 5120, 7168, 8192, 16384)
ROPE_DIMS = (2, 8, 16, 32, 64, 96, 128, 256)
GROUP_SIZES = (8, 16, 32, 64, 128, 256)
RING_BYTES_LIMIT = 48 * 1024  # README: a stream ring of at most 48 KB of shared memory


def draw_chain(rng: random.Random, hidden: int) -> list[dict]:
    norm = rng.choice(
        [
            [],
            [{"kind": "rmsnorm", "weight": rng.random() < 0.8, "eps": rng.choice([1e-6, 1e-5, 1e-2])}],
            [{"kind": "layernorm", "weight": rng.random() < 0.8, "bias": rng.random() < 0.7}],
        ]
    )
    rope = []
    if rng.random() < 0.6:
        dims = [d for d in ROPE_DIMS if d <= hidden]
        rope = [{"kind": "rope", "rope_dim": rng.choice(dims), "span": rng.choice(["tail", "head"]), "style": rng.choice(["neox", "gptj"])}]
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
    return norm + rope + quant or [{"kind": "rmsnorm"}]


def draw_outputs(rng: random.Random, ops: list[dict]) -> dict:
    kinds = [op["kind"] for op in ops]
    changes_row = any(kind in ("rmsnorm", "layernorm", "rope") for kind in kinds)
    outputs = {
        "mean": "layernorm" in kinds and rng.random() < 0.4,
        "rstd": any(kind in ("rmsnorm", "layernorm") for kind in kinds) and rng.random() < 0.4,
    }
    if not changes_row:
        outputs["y"] = False  # Y would be a copy of x
    elif "quant_fp8" in kinds or outputs["mean"] or outputs["rstd"]:
        outputs["y"] = rng.random() < 0.5
    return outputs


def draw_schedule(rng: random.Random, spec: dict) -> dict:
    ops = spec["op"]
    kinds = [op["kind"] for op in ops]
    row_bytes = spec["hidden"] * DTYPE_BYTES[spec["dtype"]]
    variants = ["auto", "auto", "fragment"]
    if row_bytes % 4 == 0 and 2 * row_bytes <= RING_BYTES_LIMIT // 2:  # room for two rows and their cos/sin
        variants.append("stream")
    if kinds == ["rmsnorm"]:
        variants += ["naive", "splitk"] if row_bytes <= RING_BYTES_LIMIT else ["splitk"]
    variant = rng.choice(variants)
    schedule = {"variant": variant}
    if rng.random() < 0.3:
        # Threads that leave each of them at most 16 of the row's values: well within the register budget.
        schedule["threads"] = rng.choice([t for t in (64, 128, 256, 512, 1024) if spec["hidden"] <= 16 * t] or [1024])
    if variant != "stream" and rng.random() < 0.3:
        schedule["block_m"] = rng.choice([1, 2] if spec["hidden"] <= 4096 else [1])
    if variant in ("auto", "fragment", "stream"):
        schedule["prefetch"] = rng.choice(["auto", True, False])
    # README: rmsnorm → [rope] → per-token quant_fp8, on a variant that holds the row in registers.
    joint_possible = kinds[0] == "rmsnorm" and kinds[-1] == "quant_fp8" and ops[-1]["group_size"] == "token"
    if joint_possible and variant in ("auto", "fragment", "stream"):
        schedule["joint_reduction"] = rng.choice(["auto", True, False])
    if variant == "stream":
        schedule["ring_slots"] = rng.choice(["auto", 2] + ([3] if 3 * row_bytes <= RING_BYTES_LIMIT // 2 else []))
    if variant == "splitk" and rng.random() < 0.5:
        threads = schedule.get("threads", 256)
        chunks = [k for k in (256, 512, 1024, 2048) if k <= spec["hidden"] and k % threads == 0 and k // threads <= 16]
        if chunks:
            schedule["blk_k"] = rng.choice(chunks)
    return schedule


def draw_valid(rng: random.Random) -> dict:
    hidden = rng.choice(HIDDENS)
    spec = {"name": "random_spec", "dtype": rng.choice(list(DTYPE_BYTES)), "hidden": hidden, "op": draw_chain(rng, hidden)}
    spec["outputs"] = draw_outputs(rng, spec["op"])
    spec["schedule"] = draw_schedule(rng, spec)
    return spec


def index_of(spec: dict, kind: str, new: dict, at: int) -> int:
    """The index of the spec's `kind` op, inserted as `new` at `at` where the chain has none."""
    found = next((i for i, op in enumerate(spec["op"]) if op["kind"] == kind), None)
    if found is None:
        spec["op"].insert(at, new)
        return at
    return found


def odd_rope_dim(rng, spec):
    i = index_of(spec, "rope", {"kind": "rope", "rope_dim": 2}, sum(op["kind"] in ("rmsnorm", "layernorm") for op in spec["op"]))
    spec["op"][i]["rope_dim"] = rng.choice([d for d in (1, 3, 5, 7, 15) if d <= spec["hidden"]])
    return f"op[{i}].rope_dim"


def rope_dim_over_hidden(rng, spec):
    i = index_of(spec, "rope", {"kind": "rope", "rope_dim": 2}, sum(op["kind"] in ("rmsnorm", "layernorm") for op in spec["op"]))
    spec["op"][i]["rope_dim"] = spec["hidden"] + 2 * rng.randint(1, 64) - (spec["hidden"] % 2)
    return f"op[{i}].rope_dim"


def group_not_dividing_hidden(rng, spec):
    i = index_of(spec, "quant_fp8", {"kind": "quant_fp8"}, len(spec["op"]))
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
    group_not_dividing_hidden,
    ops_out_of_order,
    threads_not_whole_warps,
    block_m_not_a_power_of_two,
    ring_slots_without_stream,
    mean_without_layernorm,
    y_from_quant_alone,
    hidden_out_of_range,
    eps_out_of_range,
)


def build_path(spec: dict) -> KernelSpec:
    """What `fusegen build` does with a spec file: parse and check it, then plan it (SpecError for either)."""
    text = dump(spec)
    checked = parse_spec(text, "random.toml")
    plan_spec(checked, text, "random.toml")
    return checked


def test_random_specs_valid_accepted_broken_refused_by_key(tmp_path):
    logging.getLogger("tilelang").setLevel(logging.WARNING)
    seed = int(os.environ.get("FUSEGEN_RANDOM_SPECS_SEED") or int.from_bytes(os.urandom(4), "little"))
    replay = f"(seed {seed}: FUSEGEN_RANDOM_SPECS_SEED={seed} replays this run)"
    rng = random.Random(seed)
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
