"""A row split over several blocks (schedule row_split): block p of a row holds its columns [p·W, (p+1)·W),
planned as a row of W columns, for chains whose ops each work inside a part (whole heads and groups). The
refused chains, where the part offsets go, the masked copies of a padded part, and that nothing changes
where the hint is left "auto"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cases import CASES, spec_for

from fusegen.build import collect_spec_files, load_and_plan
from fusegen.emit import kernel_module, plan_json, reference_module
from fusegen.errors import ChainError
from fusegen.plan import plan
from fusegen.spec import KernelSpec
from fusegen.tuning import TunedRoute, Tuning

ROOT = Path(__file__).resolve().parent.parent
# DeepSeek-V3's q_b: 128 heads of 192, gptj RoPE on the last 64 of each from a cos_sin_cache.
Q_B = {
    "name": "q_b",
    "dtype": "bfloat16",
    "hidden": 24576,
    "head_dim": 192,
    "op": [{"kind": "rope", "rope_dim": 64, "style": "gptj", "source": "cache", "max_position": 8192}],
}
SPLIT_CASES = sorted(name for name in CASES if "row_split" in spec_for(name).get("schedule", {}))


def planned(spec: dict, **schedule):
    return plan(KernelSpec.model_validate({**spec, "schedule": {**spec.get("schedule", {}), **schedule}}), "k.toml")


def refusal(spec: dict, **schedule) -> str:
    with pytest.raises(ChainError) as caught:
        planned(spec, **schedule)
    assert caught.value.key == "schedule.row_split"
    return caught.value.message


def test_a_split_that_does_not_divide_the_row_names_the_rule():
    assert 'must be "auto" or the blocks each row is split over, a divisor of hidden = 24576' in refusal(Q_B, row_split=7)
    assert "got 0" in refusal(Q_B, row_split=0)


@pytest.mark.parametrize("variant", ["stream", "naive", "splitk"])
def test_only_the_fragment_variant_splits_a_row(variant):
    spec = {**Q_B, "hidden": 4096, "head_dim": 128, "op": [{"kind": "rmsnorm", "over": "head"}]}
    assert f'variant "fragment" only, not "{variant}"' in refusal(spec, variant=variant, row_split=2)


def test_a_split_row_takes_one_row_per_block():
    assert 'block_m must be "auto" or 1 with it, got 2' in refusal(Q_B, row_split=8, block_m=2)


@pytest.mark.parametrize(
    ("ops", "head_dim", "need"),
    [
        ([{"kind": "rmsnorm"}], None, "op[0] rmsnorm normalises over the whole row"),
        ([{"kind": "layernorm"}], None, "op[0] layernorm normalises over the whole row"),
        ([{"kind": "rmsnorm", "columns": [0, 512]}], None, "op[0] rmsnorm normalises over columns [0, 512) of the row"),
        (
            [{"kind": "rmsnorm", "over": "head"}, {"kind": "quant_fp8"}],
            128,
            "op[1] quant_fp8 takes one scale from the amax of the whole row",
        ),
        ([{"kind": "rope", "rope_dim": 64}], None, "op[0] rope rotates one span of the row (its tail 64 columns)"),
    ],
)
def test_an_op_that_needs_the_whole_row_refuses_the_split(ops, head_dim, need):
    spec = {"name": "k", "dtype": "bfloat16", "hidden": 4096, "op": ops, **({"head_dim": head_dim} if head_dim else {})}
    message = refusal(spec, row_split=4)
    assert message.startswith('must be "auto" or 1 for this chain, got 4') and need in message


@pytest.mark.parametrize(
    ("spec", "row_split", "unit", "allowed"),
    [
        (Q_B, 256, 192, "1, 2, 4, 8, 16, 32, 64, 128"),  # 96 columns: half a head
        ({**Q_B, "hidden": 4096, "head_dim": None, "op": [{"kind": "quant_fp8", "group_size": 128}]}, 64, 128, "1, 2, 4, 8, 16, 32"),
    ],
)
def test_a_part_cutting_a_head_or_group_in_two_names_the_splits_that_fit(spec, row_split, unit, allowed):
    spec = {key: value for key, value in spec.items() if value is not None}
    message = refusal(spec, row_split=row_split)
    assert f"a part must be a multiple of {unit} columns; allowed: {allowed}" in message


def test_the_q_b_split_is_planned_as_rows_of_a_part():
    split = planned(Q_B, row_split=16)
    route = split.routes[0]
    s, layout = route.schedule, route.schedule.layout(Q_B["hidden"])
    assert (s.variant, s.row_split, s.padded_hidden, s.threads, s.vector_bytes) == ("fragment", 16, 1536, 64, 16)
    assert (layout.hidden, layout.parts, layout.pads_columns) == (1536, 16, False)
    assert route.buffer("row").shape == (1536,) and route.buffer("rope_partner").shape == (1536,)
    assert '"row_split": 16' in plan_json(split)


def test_the_split_kernel_puts_the_parts_on_the_grid_and_offsets_every_column():
    source = kernel_module(planned(Q_B, row_split=16))
    assert "with T.Kernel(m, row_split, threads=threads) as (block, part):" in source
    assert "part_columns = HIDDEN // row_split" in source
    assert "T.copy(X[block, part * part_columns], row)" in source
    assert "T.copy(row, Y[block, part * part_columns])" in source
    # Per-token inputs are read by the token alone: every part gathers its token's cache row.
    assert "CosSinCache[Positions[block], j]" in source
    assert "return fused_program(threads=64, vector=8, row_split=16)" in source


def test_per_head_and_per_group_outputs_start_at_the_parts_first_head_and_group():
    heads = kernel_module(planned(spec_for("qk_norm_rope_cache_split4")))
    assert "Rstd[block, part * (part_columns // HEAD_DIM) + h] = rstd[h]" in heads
    # A per-head weight repeats in every head, and a part starts at a head: read as unsplit.
    assert "Weight[j % HEAD_DIM]" in heads
    groups = kernel_module(planned(spec_for("rope_quant_column_split4")))
    assert "T.copy(group_scale, Scale[block, part * (part_columns // GROUP_SIZE)])" in groups
    assert "T.copy(quantized, Q[block, part * part_columns])" in groups


def test_a_padded_part_is_copied_in_and_out_masked_at_the_parts_end():
    """T.copy masks a padded row at the end of the tensor's row, which bounds the last part only: another
    part's padding columns would read the next part's columns and write over them."""
    source = kernel_module(planned(spec_for("add_rescale_quant_padded_split2")))
    body = source.split("as (block, part):", 1)[1]
    assert not re.search(r"T\.copy\([^\n]*part \* ", body), "a copy of a padded part bounded by the tensor's row"
    assert "row[j] = T.if_then_else(j < part_columns, T.cast(X[block, part * part_columns + j]" in body
    assert "scaleweight_staged[j] = T.if_then_else(j < part_columns, ScaleWeight[part * part_columns + j]" in body
    for store in [
        "if j < part_columns:\n                    ResidualOut[block, part * part_columns + j] = residual_row[j]",
        "if j < part_columns:\n                    Y[block, part * part_columns + j] = row[j]",
        "if j < part_columns:\n                    Q[block, part * part_columns + j] = quantized[j]",
        "if j < part_columns // GROUP_SIZE:\n                    Scale[block, part * (part_columns // GROUP_SIZE) + j] = group_scale[j]",
    ]:
        assert store in body


def test_a_padded_parts_heads_are_stored_up_to_the_parts_own():
    source = kernel_module(planned(spec_for("head_norm_padded_split2")))
    assert "if h < part_columns // HEAD_DIM:\n                    Rstd[block, part * (part_columns // HEAD_DIM) + h] = rstd[h]" in source
    assert "j < part_columns" in source.split("# --- op[1]", 1)[1]  # RoPE's padding guard is the part's


@pytest.mark.parametrize("name", SPLIT_CASES)
def test_the_reference_is_the_same_math_with_or_without_the_split(name):
    split = spec_for(name)
    whole = {**split, "schedule": {key: value for key, value in split["schedule"].items() if key not in ("row_split", "threads")}}

    def body(spec):
        return reference_module(plan(KernelSpec.model_validate(spec), "k.toml")).split("\n", 2)[2]

    assert body(split) == body(whole)


def test_the_ledger_counts_the_same_bytes_split():
    assert planned(Q_B, row_split=16).ledger == planned(Q_B).ledger


def test_auto_splits_rows_only_for_few_tokens_for_every_spec_and_case():
    """Left "auto", a row is split only on the planner's routes for up to 64 tokens (and up to 8, where parts of
    rows no op normalises are finer); every other route keeps one block per row, and its plan.json has no
    row_split (as before the hint existed)."""
    plans = load_and_plan(collect_spec_files([ROOT / "specs", ROOT / "specs" / "models"]), Tuning.load(ROOT / "tuning.json"))
    plans += [plan(KernelSpec.model_validate(spec_for(name)), name) for name in CASES if name not in SPLIT_CASES]
    split = [r for p in plans for r in p.routes if r.schedule.row_split > 1]
    assert split and all(r.last_tokens in (8, 64) for r in split)
    whole = [p for p in plans if all(r.schedule.row_split == 1 for r in p.routes)]
    assert all('"row_split"' not in plan_json(p) for p in whole)
    assert "row_split" not in KernelSpec.model_validate(Q_B).model_dump(mode="json")["schedule"]


def test_the_planner_splits_rows_for_few_tokens_where_the_chain_allows():
    """q_b at 1 / 8 / 64 tokens ran 2.7 / 2.9 / 4.2 µs with one block per row, 1.31 / 1.65 / 3.46 split into
    16 parts of 1536 columns, and 8 % slower split at 16384: the split is the route for up to 64 tokens. No op
    normalises its row, so up to 8 tokens its parts are of 768 columns (1.50 / 1.68 µs against 1.49 / 1.71 at 1 /
    8 tokens in perf/probe100)."""
    p = load_and_plan([ROOT / "specs" / "models" / "deepseek-v3-mla-q-b.toml"])[0]
    fine, few, many = p.routes
    assert [(r.first_tokens, r.last_tokens) for r in p.routes] == [(1, 8), (9, 64), (65, None)]
    assert [(r.schedule.row_split, r.schedule.padded_hidden) for r in p.routes] == [(32, 768), (16, 1536), (1, 24576)]
    assert any("the planner's split for up to 64 tokens" in r for r in few.schedule.reasons)
    assert any("the planner's split for up to 8 tokens" in r and "no op normalises the row" in r for r in fine.schedule.reasons)
    source = kernel_module(p)
    assert "T.Kernel(m, row_split" in source and "Tokens 1–8" in source and "Tokens 9–64" in source


@pytest.mark.parametrize(
    ("tokens", "row_split"),
    [(8, 32), (9, 16), (64, 16), (65, 1), (4096, 1)],
)
def test_a_pinned_token_count_takes_the_one_route_that_serves_it(tokens, row_split):
    (route,) = plan(KernelSpec.model_validate({**Q_B, "tokens": tokens}), "k.toml").routes
    assert (route.first_tokens, route.last_tokens, route.schedule.row_split) == (1, None, row_split)


def test_parts_keep_at_least_3_kb_whole_heads_and_groups():
    # bf16 4096 in heads of 128 → 2 parts of 2048 (4 KB; 4 of 2 KB would be too small); fp32 → 4 of 1024
    # (3 KB would cut a head); parts of whole 1024-column groups in fp32 → 4
    head = {"name": "k", "hidden": 4096, "head_dim": 128, "op": [{"kind": "rmsnorm", "over": "head"}, {"kind": "rope", "rope_dim": 128}]}
    assert planned({**head, "dtype": "bfloat16"}).routes[0].schedule.row_split == 2
    assert planned({**head, "dtype": "float32"}).routes[0].schedule.row_split == 4
    # 2048 bf16 columns (4 KB) would make parts of 2 KB: nothing to split (its route up to 256 tokens is four
    # warps a row, schedule.wave_threads)
    assert all(r.schedule.row_split == 1 for r in planned({**head, "dtype": "bfloat16", "hidden": 2048}).routes)
    grouped = {**head, "dtype": "float32", "op": [{"kind": "rope", "rope_dim": 64}, {"kind": "quant_fp8", "group_size": 1024}]}
    assert planned(grouped).routes[0].schedule.row_split == 4


def test_rows_no_op_normalises_take_1_kb_parts_up_to_8_tokens_where_3_kb_parts_split_them():
    # bf16 add → rescale 14336 in heads of 128: 28 parts of 1 KB up to 8 tokens, 8 of 3.5 KB to 64 (perf/probe100:
    # 1.76 → 1.39 µs at one token, 1.83 → 1.51 at 8; at 64 finer parts lost on other rows by up to 19 %).
    normless = {
        "name": "k",
        "dtype": "bfloat16",
        "hidden": 14336,
        "head_dim": 128,
        "op": [{"kind": "add_residual"}, {"kind": "rescale", "factor": 0.125}],
    }
    routes = planned(normless).routes
    assert [(r.first_tokens, r.last_tokens, r.schedule.row_split, r.schedule.padded_hidden) for r in routes[:2]] == [
        (1, 8, 28, 512),
        (9, 64, 8, 1792),
    ]
    # A 3 KB row has no 3 KB split: whole (split in two to four such rows lost 3–15 %). A normalised row keeps
    # its 3 KB parts up to 64 tokens.
    assert all(r.schedule.row_split == 1 for r in planned({**normless, "hidden": 1536, "head_dim": None}).routes)
    normalised = planned({**normless, "op": [{"kind": "rmsnorm", "over": "head"}, {"kind": "rescale", "factor": 0.125}]}).routes
    assert (normalised[0].first_tokens, normalised[0].last_tokens, normalised[0].schedule.row_split) == (1, 64, 8)


@pytest.mark.parametrize(
    "extra",
    [
        {"op": [{"kind": "rmsnorm"}, {"kind": "rope", "rope_dim": 64}]},  # a row-wide norm
        {"op": [{"kind": "rope", "rope_dim": 64}, {"kind": "quant_fp8"}]},  # a per-token scale
        {"schedule": {"threads": 512}},
        {"hidden": 3072, "schedule": {"variant": "stream"}},
        {"schedule": {"row_split": 2}},
        {"schedule": {"block_m": 2}},
    ],
)
def test_no_split_route_where_the_chain_needs_whole_rows_or_the_hints_pin_the_schedule(extra):
    p = planned({**Q_B, **extra})
    assert len(p.routes) == 1 and p.routes[0].last_tokens is None


def test_tuned_routes_replace_the_planners_split():
    tuned = (TunedRoute(1, None, {"variant": "fragment", "threads": 384}, "test"),)
    (route,) = plan(KernelSpec.model_validate(Q_B), "k.toml", tuned).routes
    assert (route.schedule.row_split, route.schedule.threads) == (1, 384)
