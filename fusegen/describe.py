"""A plan as text a kernel engineer reads top to bottom (`fusegen plan`)."""

from __future__ import annotations

from .emit import schedule_summary
from .errors import one_line
from .model import DTYPE_BYTES, Plan
from .ops import REGISTRY
from .spec import KernelSpec, repeated_by_y, unobserved_ops, unread_row_keys

# A pinned thread count that pads the row (or part) to this many times its columns or more is pointed out: every
# padding column is loaded masked, computed and reduced (bf16 per-head RMSNorm 9216 on a hinted 1024 threads, each
# 2304-column part padded to 24576, ran 0.065 × copy on an H100: perf/probe113). The planner keeps such a count's
# 16-byte vectors: narrower ones ran most such rows faster but some up to 1.5 × slower, and no rule found tells them
# apart (perf/probe114, probe115).
PADDING_NOTE_FACTOR = 2
# A reread program whose finishing pass reuses the statistics pass's loads (Schedule.tiles_held).
HELD_WORDS = ", the row's words held in registers between the passes"


def output_notes(p: Plan) -> list[str]:
    """What the spec asks the kernel to compute, take or store for nothing (spec.unobserved_ops,
    spec.unread_row_keys, spec.repeated_by_y, a thread count that pads the row many times over), each naming
    the key that saves it: `fusegen build` and `fusegen plan` say these, the build still builds."""
    spec = KernelSpec.model_validate(p.spec)
    where = one_line(p.spec_file)
    notes = [
        f"op[{index}] ({spec.op[index].kind}) reaches no output (y = false, and it writes nothing of its own): the kernel "
        f"computes it for nothing; remove it from {where}, or set y = true under [outputs]"
        for index in unobserved_ops(spec)
    ]
    if unread := unread_row_keys(spec):
        index, keys = unread
        op = spec.op[index]
        written = [out.arg for out in REGISTRY[op.kind].outputs if spec.writes(out)]
        one_key = len(keys) == 1
        notes.append(
            f"op[{index}] ({op.kind}): {' and '.join(keys)} {'reaches' if one_key else 'reach'} no output (y = false, and op[{index}] "
            f"writes only {' and '.join(written)}, computed before {'it acts' if one_key else 'they act'}): the kernel takes "
            f"{'it' if one_key else 'them'} for nothing; set {' and '.join(f'op[{index}].{key} = false' for key in keys)} in {where}"
        )
    if repeated := repeated_by_y(spec):
        m = p.ledger_tokens
        saved = p.hidden * DTYPE_BYTES[p.dtype] * m
        notes.append(
            f"Y repeats {repeated} bit for bit (no op after the one writing {repeated} changes the row); `y = false` under "
            f"[outputs] in {where} saves {saved / 1e6:.1f} MB at {m} tokens, {saved / p.ledger.fused_bytes(m):.0%} of the kernel's traffic"
        )
    # The spec's own threads hint costs that padding's work (PADDING_NOTE_FACTOR), and it can say so.
    s = p.schedule
    columns = p.hidden // s.row_split
    if spec.schedule.threads != "auto" and s.padded_hidden >= PADDING_NOTE_FACTOR * columns:
        part = f"each {columns}-column part of the row" if s.row_split > 1 else f"the {columns}-column row"
        notes.append(
            f"threads = {spec.schedule.threads} under [schedule] in {where} pads {part} to {s.padded_hidden} columns "
            f"({s.padded_hidden / columns:.1f}× the work: each padding column is loaded masked, computed and reduced); "
            '`threads = "auto"` lets the planner weigh the padding'
        )
    return notes


def _shape(dims) -> str:
    return "(" + ", ".join("m" if d.tokens else str(d.size) for d in dims) + ")"


def describe_plan(p: Plan) -> str:
    m = p.ledger_tokens
    fused, unfused = p.ledger.fused_bytes(m), p.ledger.unfused_bytes(m)
    out = [
        f"{p.name}  ({p.identity}, from {one_line(p.spec_file)})",
        f"  {p.dtype}, hidden {p.hidden}, tokens {'pinned to ' + str(p.tokens) if p.tokens else 'dynamic'}",
        "",
        "schedule" + (" by token count" if len(p.routes) > 1 else ""),
    ]
    for index, route in enumerate(p.routes):
        s = route.schedule
        out += [
            f"  program_{index}, tokens {route.label()}: {schedule_summary(route)} ({route.origin})",
            (
                f"    vector {s.vector_elems} elements, the row in {s.tiles} tiles of {s.padded_hidden // s.tiles} columns, "
                f"{s.vector_elems} fp32 values per thread at a time{HELD_WORDS if s.tiles_held else ''} (~{s.register_estimate} registers)"
                if s.variant == "reread"
                else f"    vector {s.vector_elems} elements, {'each part' if s.row_split > 1 else 'row'} padded to {s.padded_hidden} columns, "
                f"{s.elems_per_thread} fp32 values per thread (~{s.register_estimate} registers)"
            ),
            *(f"    - {r}" for r in s.reasons),
        ]
    out += ["", "stages"]
    for st in p.stages:
        out.append(f"  op[{st.index}] {st.summary}")
        out += [f"      reduction {r.name}: {r.op} of {r.source} over {r.axis} → {r.result}" for r in st.reductions]
        out += [f"      - {d}" for d in st.decisions]
    if p.y_before is not None:
        at = f"before op[{p.stages[p.y_before].index}]" if p.y_before < len(p.stages) else "after the last op"
        out.append(f"  Y stored {at}: the row is final there")
    out += ["", "buffers"]
    out += [f"  global  {t.role:<6} {t.param:<7} {_shape(t.shape):<12} {t.dtype:<14} {t.doc}" for t in (*p.inputs, *p.outputs)]
    for index, served in enumerate(p.programs):
        route = served[0]
        out += [
            "",
            f"  program_{index} allocates (every buffer; {route.barriers_per_row} barrier(s) per row, one per shared buffer marked |"
            + (
                "; the row loop may take one more, TileLang's, ordering a row's first shared write after the last row's reads"
                if route.schedule.variant == "stream"
                else ""
            )
            + "):",
        ]
        out += [
            f"  {b.scope:<8}{'|' if b.barrier else ' '} {b.name:<22} {str(b.shape):<16} {b.dtype:<14} {b.owner:<16} {b.why}"
            for b in route.scratch
        ]
    out += ["", f"ledger at {m} tokens (every input read once, every output written once)"]
    for label, lines, total in (("fused", p.ledger.fused, fused), ("unfused", p.ledger.unfused, unfused)):
        out.append(f"  {label}: {total / 1e6:.1f} MB")
        for line in lines:
            amount = line.bytes_per_token * m + line.fixed_bytes
            out.append(f"      {line.kernel:<20} {line.direction:<5} {line.tensor:<18} {amount / 1e6:10.3f} MB")
    out.append(f"  fusion saves {unfused / fused:.2f}× the bytes")
    if notes := output_notes(p):
        out += ["", "notes", *(f"  {note}" for note in notes)]
    return "\n".join(out)
