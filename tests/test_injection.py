"""No string a user can put in a spec, or in a spec's file name, reaches generated code as anything but data.

Strings go into every text-valued field (and key) of a valid spec, both as TOML strings (the value
arrives intact) and spliced raw into the TOML text (the value may break the file's structure). Loading and
planning must then either reject the spec with a SpecError/ChainError (never another exception), or accept
only allowed literals and identifiers. Accepted names are rendered and must sit in the generated files
exactly where any other name would. File names with newlines and quotes must stay inside the header comment.
"""

from __future__ import annotations

import ast
import builtins
import copy
import keyword
import re
import symtable
import tomllib

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fusegen.build import display_path
from fusegen.emit import header, render
from fusegen.errors import ChainError, SpecError
from fusegen.model import Plan
from fusegen.ops import REGISTRY
from fusegen.plan import plan
from fusegen.spec import DTYPES, KernelSpec, Outputs, ScheduleHints, load_spec, parse_spec

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

BASE = {
    "name": "fused_kernel",
    "dtype": "float16",
    "hidden": 4096,
    "op": [
        {"kind": "rmsnorm", "eps": 1e-6},
        {"kind": "rope", "rope_dim": 64, "span": "tail", "style": "neox"},
        {"kind": "quant_fp8", "group_size": 128, "fp8": "e4m3fn", "scale": "fp32"},
    ],
    "outputs": {"y": True},
    "schedule": {"variant": "auto", "block_m": "auto", "threads": "auto", "blk_k": "auto", "blocks_per_sm": "auto", "ring_slots": "auto"},
}

# The strings each field may hold once accepted, by field name; the name must be a plain identifier, and
# every other field (numbers, booleans) holds no string at all.
ALLOWED_STRINGS = {
    "dtype": set(DTYPES),
    "kind": set(REGISTRY),
    "span": {"tail", "head"},
    "style": {"neox", "gptj"},
    "group_size": {"token"},
    "fp8": {"e4m3fn", "e5m2"},
    "scale": {"fp32", "ue8m0"},
    "variant": {"auto", "fragment", "stream", "naive", "splitk"},
    "block_m": {"auto"},
    "threads": {"auto"},
    "blk_k": {"auto"},
    "prefetch": {"auto"},
    "joint_reduction": {"auto"},
    "blocks_per_sm": {"auto"},
    "ring_slots": {"auto"},
}
# Every field of BASE a string can be put into, with the strings it may then hold (None: an identifier).
FIELDS: dict[tuple, set[str] | None] = {
    path: None if path == ("name",) else ALLOWED_STRINGS.get(path[-1], set())
    for path in [
        ("name",),
        ("dtype",),
        ("hidden",),
        ("op", 0, "kind"),
        ("op", 0, "eps"),
        ("op", 1, "kind"),
        ("op", 1, "rope_dim"),
        ("op", 1, "span"),
        ("op", 1, "style"),
        ("op", 2, "kind"),
        ("op", 2, "group_size"),
        ("op", 2, "fp8"),
        ("op", 2, "scale"),
        ("outputs", "y"),
        ("schedule", "variant"),
        ("schedule", "block_m"),
        ("schedule", "threads"),
        ("schedule", "blk_k"),
        ("schedule", "blocks_per_sm"),
        ("schedule", "ring_slots"),
    ]
}
# Tables where a key is user text, and the keys each accepts.
KEY_TABLES: dict[tuple, set[str]] = {
    (): set(KernelSpec.model_fields),
    ("op", 0): set(REGISTRY["rmsnorm"].spec.model_fields),
    ("outputs",): set(Outputs.model_fields),
    ("schedule",): set(ScheduleHints.model_fields),
}
ALLOWED_WORDS = sorted({w for allowed in FIELDS.values() if allowed for w in allowed} | {k for keys in KEY_TABLES.values() for k in keys})
TRICKY = [
    "",
    " ",
    '"',
    "'",
    '"""',
    "'''",
    "\\",
    "\\n",
    "\n",
    "\r\n",
    "\t",
    "\x00",
    "\x1b[31m",
    "\u2028",
    "\u202e",
    "\ufeff",
    "__import__('os').system('id')",
    '__import__("os")',
    "os.system",
    "eval",
    "exec",
    "${HOME}",
    "{name}",
    "%s",
    "../x",
    "..\\x",
    "a/b",
    "/etc/passwd",
    "x y",
    "r\u0430ms",
    "class",
    "match",
    "None",
    "True",
    "_",
    "__init__",
    "1abc",
    "k" * 100,
    "\u0440\u043e\u043f\u0435",
    "ﬁ",
    "Ｋ",
]
texts = st.one_of(
    st.text(max_size=40),
    st.sampled_from(TRICKY + ALLOWED_WORDS),
    st.builds(lambda a, b: a + b, st.sampled_from(ALLOWED_WORDS), st.sampled_from(TRICKY)),
    st.builds(lambda a, b: a + b, st.sampled_from(TRICKY), st.sampled_from(ALLOWED_WORDS)),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,70}", fullmatch=True),
)


def is_plain_identifier(name: str) -> bool:
    return name.isascii() and name.isidentifier() and not keyword.iskeyword(name) and not keyword.issoftkeyword(name)


# --- a small TOML writer, so an arbitrary string can be put into a spec intact ---------------------------


def toml_string(text: str) -> str:
    escaped = "".join("\\" + c if c in '"\\' else f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) == 0x7F else c for c in text)
    return f'"{escaped}"'


def toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else toml_string(key)


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(map(toml_value, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _is_table_array(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def dump(spec: dict) -> str:
    """TOML text of `spec`: sub-tables and arrays of tables as sections, everything else inline."""
    lines = [f"{toml_key(k)} = {toml_value(v)}" for k, v in spec.items() if not isinstance(v, dict) and not _is_table_array(v)]
    for key, value in spec.items():
        for table in value if _is_table_array(value) else [value] if isinstance(value, dict) else []:
            lines += ["", f"[[{toml_key(key)}]]" if _is_table_array(value) else f"[{toml_key(key)}]"]
            lines += [f"{toml_key(k)} = {toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def at(tree, path: tuple):
    for part in path:
        tree = tree[part]
    return tree


def load_and_plan(text: str):
    """What `fusegen build` does with a spec's text, short of writing: None when rejected as a spec error."""
    try:
        spec = parse_spec(text, "specs/fuzz.toml")
        loaded = spec, plan(spec, "specs/fuzz.toml")
    except (SpecError, ChainError) as exc:
        assert "\n" not in str(exc), "a spec error must be one line"
        event("rejected")
        return None
    event("accepted")  # --hypothesis-show-statistics shows that both branches are exercised
    return loaded


def assert_spec_sane(spec: KernelSpec) -> None:
    """Every string the accepted spec holds is an allowed literal, or the name, a plain identifier."""
    data = spec.model_dump()
    assert is_plain_identifier(data["name"]) and len(data["name"]) <= 64, data["name"]
    tables = [{k: v for k, v in data.items() if k != "name"}, *data["op"], data["outputs"], data["schedule"]]
    for table in tables:
        for key, value in table.items():
            if isinstance(value, str):
                assert value in ALLOWED_STRINGS.get(key, ()), (key, value)


# --- values put into the spec as TOML strings ------------------------------------------------------------


def _with_own_words(choices: dict):
    """(path, text) pairs where the text is often one the path allows, so the accepting branch is exercised."""
    return st.sampled_from(list(choices)).flatmap(
        lambda path: st.tuples(st.just(path), st.one_of(texts, st.sampled_from(sorted(choices[path] or {"some_kernel"}))))
    )


@SETTINGS
@given(path_and_value=_with_own_words(FIELDS))
def test_string_in_any_field_is_rejected_or_allowed(path_and_value):
    path, value = path_and_value
    raw = copy.deepcopy(BASE)
    at(raw, path[:-1])[path[-1]] = value
    text = dump(raw)
    assert tomllib.loads(text) == raw, "the test's TOML writer must round-trip the value"
    loaded = load_and_plan(text)
    if loaded is None:
        return
    spec, _ = loaded
    allowed = FIELDS[path]
    if allowed is None:
        assert is_plain_identifier(value), value
    else:
        assert value in allowed, (path, value)
    assert at(spec.model_dump(), path) == value
    assert_spec_sane(spec)


@SETTINGS
@given(table_and_key=_with_own_words(KEY_TABLES))
def test_string_as_a_key_is_rejected_or_allowed(table_and_key):
    table, key = table_and_key
    raw = copy.deepcopy(BASE)
    if key in at(raw, table):
        return  # overwriting a key is a value test, above
    at(raw, table)[key] = True
    text = dump(raw)
    assert tomllib.loads(text) == raw
    loaded = load_and_plan(text)
    if loaded is not None:
        assert key in KEY_TABLES[table], (table, key)
        assert_spec_sane(loaded[0])


# Any TOML value (not only strings) anywhere, including in place of whole tables.
toml_values = st.recursive(
    st.one_of(
        st.booleans(),
        st.integers(min_value=-(2**63), max_value=2**63 - 1),
        st.floats(),
        texts,
        st.dates(),
    ),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=8,
)
VALUE_PATHS = [*FIELDS, ("op",), ("op", 0), ("outputs",), ("schedule",), ("op", 2, "amax_floor")]


@SETTINGS
@given(path=st.sampled_from(VALUE_PATHS), value=toml_values)
def test_any_value_anywhere_is_rejected_or_sane(path, value):
    raw = copy.deepcopy(BASE)
    at(raw, path[:-1])[path[-1]] = value
    loaded = load_and_plan(dump(raw))
    if loaded is not None:
        assert_spec_sane(loaded[0])


# --- values spliced raw into the TOML text: they may close the string and add keys of their own -----------

TEMPLATE = dump(BASE)
# Each text value of the template, as the position a raw string replaces.
SPLICE_POINTS = sorted({m.start(1) for m in re.finditer(r'= "([^"]*)"', TEMPLATE)})


@SETTINGS
@given(point=st.sampled_from(SPLICE_POINTS), value=texts)
def test_raw_text_spliced_into_a_string_is_rejected_or_sane(point, value):
    end = TEMPLATE.index('"', point)
    loaded = load_and_plan(TEMPLATE[:point] + value + TEMPLATE[end:])
    if loaded is not None:
        assert_spec_sane(loaded[0])


@SETTINGS
@given(value=texts)
def test_raw_text_spliced_as_a_key_is_rejected_or_sane(value):
    text = TEMPLATE.replace("[outputs]\n", f"[outputs]\n{value} = true\n")
    loaded = load_and_plan(text)
    if loaded is not None:
        assert_spec_sane(loaded[0])


# --- accepted names in the generated files ---------------------------------------------------------------

PLACEHOLDER = "zz_placeholder_kernel"
near_names = st.one_of(
    st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,63}", fullmatch=True),
    st.sampled_from(["kernel", "x", "T", "torch", "program_0", "ROUTES", "launcher", "reference", "Outputs", "out", "NAME", "m", "self"]),
    st.builds(lambda a, b: a + b, st.sampled_from(["k", "rms", "x"]), st.sampled_from(TRICKY)),
)


def rendered(name: str) -> tuple[Plan, dict[str, str]]:
    raw = copy.deepcopy(BASE)
    raw["name"] = name
    spec = parse_spec(dump(raw), "specs/fuzz.toml")
    kernel_plan = plan(spec, "specs/fuzz.toml")
    return kernel_plan, render(kernel_plan)


def _blank_identity(kernel_plan, files: dict[str, str]) -> dict[str, str]:
    """The files with the identity blanked: its hash covers the name, so it differs between any two names."""
    return {file_name: text.replace(kernel_plan.identity, "<identity>") for file_name, text in files.items()}


REFERENCE_PLAN, REFERENCE_FILES = rendered(PLACEHOLDER)


def skeleton(source: str) -> str:
    """The module's AST with every constant reduced to its type: what the emitter decides (statements,
    names, attributes), not the text it carries."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant):
            node.value = type(node.value).__name__
    return ast.dump(tree, annotate_fields=False)


def python_skeletons(kernel_plan: Plan) -> dict[str, str]:
    """The skeleton of every generated Python file, by file name (the test file's with the name left out)."""
    return {
        "test_<name>.py" if file_name == f"test_{kernel_plan.name}.py" else file_name: skeleton(text)
        for file_name, text in render(kernel_plan).items()
        if file_name.endswith(".py")
    }


def variant_spec(name: str, variant: str, tokens: int | None = None) -> dict:
    """BASE (or, for the variants made for it, a chain of one rmsnorm) under `name` with this variant."""
    raw = copy.deepcopy(BASE)
    raw.update(name=name, schedule={"variant": variant}, **({"tokens": tokens} if tokens else {}))
    if variant in ("naive", "splitk"):
        raw["op"] = raw["op"][:1]
    return raw


# Every variant's module (stream twice: a pinned token count sizes its grid with the builtin `min`).
VARIANTS = [("fragment", None), ("stream", None), ("stream", 4096), ("naive", None), ("splitk", None)]


def _variant_plan(name: str, variant: str, tokens: int | None) -> Plan:
    return plan(parse_spec(dump(variant_spec(name, variant, tokens)), "specs/fuzz.toml"), "specs/fuzz.toml")


def _identifiers(text: str) -> set[str]:
    """Every name any scope of a module binds or reads."""
    names, scopes = set(), [symtable.symtable(text, "module.py", "exec")]
    while scopes:
        scope = scopes.pop()
        names |= {symbol.get_name() for symbol in scope.get_symbols()}
        scopes += scope.get_children()
    return names


VARIANT_PLANS = {variant: _variant_plan(PLACEHOLDER, *variant) for variant in VARIANTS}
VARIANT_FILES = {variant: {f: text for f, text in render(p).items() if f.endswith(".py")} for variant, p in VARIANT_PLANS.items()}
# Every name a generated module uses, and every builtin one could reach: a kernel may be named like any of them.
USED_NAMES = sorted({n for files in VARIANT_FILES.values() for text in files.values() for n in _identifiers(text)} | set(dir(builtins)))
NAMEABLE = [n for n in USED_NAMES if re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,63}", n) and is_plain_identifier(n)]


@pytest.mark.parametrize("variant", VARIANTS, ids=str)
def test_the_kernel_name_is_no_identifier_of_any_generated_module(variant):
    """The name is data (NAME, docstrings, the CUDA kernel's global symbol), never a name bound or read in
    any scope: so no kernel name can shadow a builtin or a name the module uses, whatever it is."""
    for file_name, text in VARIANT_FILES[variant].items():
        assert PLACEHOLDER not in _identifiers(text), file_name
        tree = ast.parse(text)
        # Where the name does appear, it is inside a string constant (or the header comment).
        in_constants = sum(n.value.count(PLACEHOLDER) for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str))
        in_comments = sum(line.count(PLACEHOLDER) for line in text.splitlines() if line.lstrip().startswith("#"))
        assert text.count(PLACEHOLDER) == in_constants + in_comments, file_name


@pytest.mark.parametrize("variant", VARIANTS, ids=str)
def test_every_used_name_is_a_kernel_name_that_changes_no_statement(variant):
    """Every builtin and every name the modules use is accepted as a kernel name, and the modules then
    parse to the same statements as with any other name."""
    baseline = python_skeletons(VARIANT_PLANS[variant])
    for name in NAMEABLE:
        assert python_skeletons(_variant_plan(name, *variant)) == baseline, name


@settings(max_examples=60, deadline=None)
@given(name=near_names)
def test_accepted_name_sits_where_any_name_would(name):
    acceptable = bool(re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,63}", name)) and is_plain_identifier(name)
    try:
        kernel_plan, files = rendered(name)
    except SpecError:
        assert not acceptable, f"{name!r} is a plain identifier and should be accepted"
        return
    assert acceptable, name
    for file_name, text in files.items():
        if file_name.endswith(".py"):
            compile(text, file_name, "exec")
    # The same bytes as with the placeholder, once it is swapped for this name: the name went exactly
    # where any name goes (a name that broke out of a string or a comment would change the text around it).
    expected = {
        file_name.replace(PLACEHOLDER, name): text.replace(PLACEHOLDER, name)
        for file_name, text in _blank_identity(REFERENCE_PLAN, REFERENCE_FILES).items()
    }
    assert _blank_identity(kernel_plan, files) == expected


# --- odd spec file names and the header comment ------------------------------------------------------------


def assert_header_holds(text: str, comment: str) -> None:
    lines = text.split("\n")
    assert lines[0].startswith(f"{comment} generated by fusegen ") and lines[1].startswith(f"{comment} identity: ")
    assert all(line.isprintable() for line in lines[:2]), "the header must not carry control or line-break characters"
    assert not lines[2].startswith(comment)


def check_rendered_with_spec_file(spec_file: str) -> None:
    spec = parse_spec(dump(BASE), spec_file)
    kernel_plan = plan(spec, spec_file)
    for file_name, text in render(kernel_plan).items():
        if file_name.endswith(".py"):
            compile(text, file_name, "exec")
            assert_header_holds(text, "#")
    assert_header_holds(header(kernel_plan, "//") + "__global__ void k() {}\n", "//")


@SETTINGS
@given(spec_file=st.one_of(st.text(), st.builds(lambda a, b: a + b + ".toml", st.sampled_from(TRICKY), st.text(max_size=20))))
def test_any_spec_file_name_stays_in_the_header_comment(spec_file):
    check_rendered_with_spec_file(spec_file)


@pytest.mark.parametrize(
    "file_name",
    ['quote".toml', "new\nline.toml", "new\nimport os\n.toml", 'triple""".toml', "back\\slash.toml", "sep\u2028arator.toml", "cr\r.toml"],
)
def test_odd_file_name_on_disk(tmp_path, file_name):
    path = tmp_path / file_name
    path.write_text(dump(BASE))
    spec, _ = load_spec(path)
    check_rendered_with_spec_file(display_path(path))


# --- text from tuning.json (and the GPU name) in the generated files ----------------------------------------
#
# The tuning file's strings reach kernel.py's docstring (the origin of each tuned route), so each is thrown
# every kind of text. Either the file (or --gpu) is rejected as a SpecError, or every generated Python file
# parses to the same statements as the baseline: the same node types, names and attributes, only the text of
# string constants may differ. A string that broke out of the docstring would add statements.

TUNED_GPU = "NVIDIA H200"
TUNED_HINTS = [{"variant": "fragment", "block_m": 1, "threads": threads, "blk_k": "auto", "prefetch": True} for threads in (128, 256, 512)]


def _tuning_data(spec: KernelSpec) -> dict:
    from fusegen.tuning import BUCKETS, problem_key, problem_summary

    buckets = [
        {
            "first_tokens": b.first_tokens,
            "last_tokens": b.last_tokens,
            "measured_at": b.measured_at,
            "hints": h,
            "median_us": 1.0,
            "planner_median_us": 1.5,
            "candidates": 4,
        }
        for b, h in zip(BUCKETS, TUNED_HINTS)
    ]
    measured = {
        "date": "2026-11-29T13:48:44+00:00",
        "commit": "3ece4af",
        "driver": "580.159.04",
        "torch": "2.11.0+cu130",
        "tilelang": "0.1.15",
    }
    gpus = {TUNED_GPU: {"measured": measured, "buckets": buckets}}
    return {"format": 1, "problems": {problem_key(spec): {"problem": problem_summary(spec), "gpus": gpus}}}


BASE_SPEC = parse_spec(dump({**BASE, "name": PLACEHOLDER}), "specs/fuzz.toml")
BASE_TUNING = _tuning_data(BASE_SPEC)
# (path in the tuning data, how to put text there): a value, or a dict key (the GPU's, the problem's).
TUNING_FIELDS = {
    "commit": ("measured", "commit"),
    "date": ("measured", "date"),
    "driver": ("measured", "driver"),
    "torch": ("measured", "torch"),
    "tilelang": ("measured", "tilelang"),
    "gpu": None,
    "problem": None,
    "problem key": None,
}
BREAKOUTS = ['"""\nimport os', '\\"""\nimport os\n"""', "'''\nx = 1", "\\", "\u2028import os", "\x85x = 1", "\x00", "\x1b[2J"]
tuning_texts = st.one_of(
    texts,
    st.sampled_from(BREAKOUTS),
    st.builds(lambda a, b: a + b, st.sampled_from(["abc1234", "NVIDIA H200", "2026-11-29"]), st.sampled_from(BREAKOUTS)),
)


def _tuned_plan(directory, data: dict, gpu: str, spec: KernelSpec = BASE_SPEC):
    """What `fusegen build --gpu GPU` plans from this tuning file; None when the file or the GPU is rejected."""
    import json

    from fusegen.tuning import Tuning

    path = directory / "tuning.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    try:
        tuning = Tuning.load(path, gpu)
    except SpecError as exc:
        assert "\n" not in str(exc) and "tuning.json" in str(exc) or "--gpu" in str(exc), str(exc)
        return None
    return plan(spec, "specs/fuzz.toml", tuning.routes(spec))


@pytest.fixture(scope="module")
def tuning_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("tuning")


@pytest.fixture(scope="module")
def tuned_baseline(tuning_dir):
    tuned = _tuned_plan(tuning_dir, BASE_TUNING, TUNED_GPU)
    assert len(tuned.programs) == 3, "the baseline must be tuned: its docstring carries the tuning origin"
    return python_skeletons(tuned)


@SETTINGS
@given(field=st.sampled_from(sorted(TUNING_FIELDS)), value=tuning_texts)
def test_tuning_file_text_is_rejected_or_stays_data(tuning_dir, tuned_baseline, field, value):
    data = copy.deepcopy(BASE_TUNING)
    ((key, entry),) = data["problems"].items()
    gpu = TUNED_GPU
    if field == "gpu":
        entry["gpus"] = {value: entry["gpus"][TUNED_GPU]}
        gpu = value
    elif field == "problem":
        entry["problem"] = value
    elif field == "problem key":
        data["problems"] = {value: entry}
    else:
        at(entry["gpus"][TUNED_GPU], TUNING_FIELDS[field][:-1])[TUNING_FIELDS[field][-1]] = value
    tuned = _tuned_plan(tuning_dir, data, gpu)
    event("rejected" if tuned is None else "accepted")
    if tuned is None:
        return
    if field == "problem key" and value != key:
        assert len(tuned.programs) == 1, "winners under another problem's key must not be used"
        return
    assert python_skeletons(tuned) == tuned_baseline


@SETTINGS
@given(name=near_names, spec_file=st.one_of(st.text(max_size=30), st.sampled_from(BREAKOUTS)))
def test_spec_text_is_rejected_or_stays_data(name, spec_file):
    """The spec's only free text, its name (the other string fields hold only the literals they allow, as
    the tests above show) and its file's name, with the same skeleton check."""
    raw = copy.deepcopy(BASE)
    raw["name"] = name
    try:
        spec = parse_spec(dump(raw), spec_file)
        kernel_plan = plan(spec, spec_file)
    except (SpecError, ChainError):
        event("rejected")
        return
    event("accepted")
    assert python_skeletons(kernel_plan) == python_skeletons(plan(BASE_SPEC, "specs/fuzz.toml"))
