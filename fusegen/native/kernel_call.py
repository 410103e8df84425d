"""The kernel launch inside a compiled TileLang program, read from its host code so that the C++ launch path
can make it itself.

A program's host function (TileLang's generated C, `get_host_source()`) checks every tensor's shape, dtype,
strides and device, selects the device, then packs the kernel's arguments (data pointers, the token count,
grid and block extents, shared memory bytes) and calls the CUDA module's kernel function, which launches.
The launcher has made every one of those checks before a call reaches C++ (runtime.Launcher), so the C++
path calls the kernel function with the same arguments the host code would pack, skipping the rest. What
the host code packs is read here from its text: each argument is a tensor's data pointer, or an integer
expression of the token count (`m`), compiled to a small stack program the C++ side evaluates per call.
Host code of any other shape (a second kernel, an argument of another kind, an expression beyond C's
arithmetic, shifts, comparisons, ?: and min/max of `m` and integers) yields None, and the program is called
through its host function.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Stack-program opcodes, as launch.cpp evaluates them: PUSH takes the next entry as a literal; SELECT pops
# a condition and two values (C's c ? a : b).
PUSH, TOKENS, ADD, SUB, MUL, DIV, MOD, SHR, SHL, MIN, MAX, NEG, LT, LE, GT, GE, EQ, NE, SELECT = range(19)
# C's binary operators this reading takes, by precedence (higher binds tighter).
_BINARY = {
    "*": (5, MUL), "/": (5, DIV), "%": (5, MOD),
    "+": (4, ADD), "-": (4, SUB),
    "<<": (3, SHL), ">>": (3, SHR),
    "<": (2, LT), "<=": (2, LE), ">": (2, GT), ">=": (2, GE),
    "==": (1, EQ), "!=": (1, NE),
}  # fmt: skip
_CALLS = {"min": MIN, "max": MAX}
# The host code's name for the token count: the emitted programs' T.dynamic("m").
TOKEN_VARIABLE = "m"
_CAST = re.compile(r"\((?:u?int(?:8|16|32|64)_t|int)\)")
_TOKEN = re.compile(r"\s*(\d+|[A-Za-z_]\w*|<<|>>|<=|>=|==|!=|[-+*/%<>?:(),])")
_SLOT = re.compile(r"^\s*\(\(\(TVMFFIAny\*\)stack_ffi_any\)\[(\d+)\]\.(type_index|zero_padding|v_int64|v_ptr)\) = (.+);$")
_CALL = re.compile(r"TVMFFIFunctionCall\((\w+)_packed, \(TVMFFIAny\*\) stack_ffi_any, (\d+), &\w+\)")
_LOOKUP = re.compile(r'TVMBackendGetFuncFromEnv\(__tvm_ffi__library_ctx, "(\w+)", &(\w+)_packed\)')
_ARGUMENT = re.compile(r"(\w+)_handle_type_index = \(\(\(TVMFFIAny\*\)args\)\[(\d+)\]\.type_index\);")
_DATA = re.compile(r"void\* (\w+) = \(\(\(DLTensor\*\)(\w+)_handle\)\[0\]\.data\);")
# TVM's type index of an integer argument (kTVMFFIInt).
_INT = "1"


@dataclass(frozen=True)
class KernelCall:
    """What the host code passes to the kernel function: `kernel` names it in the program's CUDA module; each
    slot is the index of the tensor (inputs, then outputs) whose data pointer it takes, or -1 for an integer,
    whose value `codes` (one stack program per slot, empty for a pointer) computes from the token count."""

    kernel: str
    tensors: tuple[int, ...]
    codes: tuple[tuple[int, ...], ...]


def compile_expression(text: str) -> tuple[int, ...] | None:
    """The stack program of a C integer expression in the token count, or None where it holds anything else.
    Casts are dropped (the C++ side computes in int64); `/` and `%` are C's, truncating (their operands here
    are never negative)."""
    text = _CAST.sub("", text).strip()
    tokens, position = [], 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            return None
        tokens.append(match[1])
        position = match.end()
    codes: list[int] = []
    at = 0

    def peek():
        return tokens[at] if at < len(tokens) else None

    def take(expected=None):
        nonlocal at
        token = peek()
        if token is None or (expected is not None and token != expected):
            raise SyntaxError(text)
        at += 1
        return token

    def ternary():
        binary(1)
        if peek() == "?":
            take()
            ternary()
            take(":")
            ternary()
            codes.append(SELECT)

    def binary(lowest):
        unary()
        while peek() in _BINARY and _BINARY[peek()][0] >= lowest:
            precedence, code = _BINARY[take()]
            binary(precedence + 1)
            codes.append(code)

    def unary():
        token = take()
        if token == "-":
            unary()
            codes.append(NEG)
        elif token == "(":
            ternary()
            take(")")
        elif token.isdigit():
            codes.extend((PUSH, int(token)))
        elif token == TOKEN_VARIABLE:
            codes.append(TOKENS)
        elif token in _CALLS:
            take("(")
            ternary()
            take(",")
            ternary()
            take(")")
            codes.append(_CALLS[token])
        else:
            raise SyntaxError(text)

    try:
        ternary()
    except SyntaxError:
        return None
    return tuple(codes) if at == len(tokens) else None


def _c_division(left: int, right: int) -> int:
    quotient = abs(left) // abs(right)
    return quotient if (left >= 0) == (right > 0) else -quotient


_BINARY_VALUES = {
    ADD: lambda left, right: left + right,
    SUB: lambda left, right: left - right,
    MUL: lambda left, right: left * right,
    DIV: _c_division,
    MOD: lambda left, right: left - right * _c_division(left, right),
    SHR: lambda left, right: left >> right,
    SHL: lambda left, right: left << right,
    MIN: min,
    MAX: max,
    LT: lambda left, right: int(left < right),
    LE: lambda left, right: int(left <= right),
    GT: lambda left, right: int(left > right),
    GE: lambda left, right: int(left >= right),
    EQ: lambda left, right: int(left == right),
    NE: lambda left, right: int(left != right),
}


def evaluate(codes: tuple[int, ...], tokens: int) -> int:
    """What launch.cpp computes from `codes` (the tests hold the two to each other and to the C text)."""
    stack: list[int] = []
    position = 0
    while position < len(codes):
        code = codes[position]
        position += 1
        if code == PUSH:
            stack.append(codes[position])
            position += 1
        elif code == TOKENS:
            stack.append(tokens)
        elif code == NEG:
            stack.append(-stack.pop())
        elif code == SELECT:
            otherwise, chosen, condition = stack.pop(), stack.pop(), stack.pop()
            stack.append(chosen if condition else otherwise)
        else:
            right, left = stack.pop(), stack.pop()
            stack.append(_BINARY_VALUES[code](left, right))
    (value,) = stack
    return value


def kernel_call(host_source: str) -> KernelCall | None:
    """The kernel launch of a program's host code (see the module docstring), or None where it is not one
    this reading covers."""
    calls = _CALL.findall(host_source)
    kernels = [(name, int(count)) for name, count in calls if name != "__tvm_set_device"]
    lookups = {handle: symbol for symbol, handle in _LOOKUP.findall(host_source)}
    if len(kernels) != 1 or kernels[0][0] not in lookups:
        return None
    handle, count = kernels[0]
    positions = {name: int(index) for name, index in _ARGUMENT.findall(host_source)}
    pointers = {pointer: positions[handle_name] for pointer, handle_name in _DATA.findall(host_source) if handle_name in positions}
    # The kernel's arguments are the slot assignments after the last call before it (the device selection).
    body = host_source[: host_source.index(f"TVMFFIFunctionCall({handle}_packed")]
    body = body[max(body.rfind("TVMFFIFunctionCall("), 0) :]
    slots: dict[int, dict[str, str]] = {}
    for line in body.splitlines():
        if match := _SLOT.match(line):
            slots.setdefault(int(match[1]), {})[match[2]] = match[3]
    tensors, codes = [], []
    for index in range(count):
        fields = slots.get(index, {})
        if "v_ptr" in fields and fields["v_ptr"] in pointers:
            tensors.append(pointers[fields["v_ptr"]])
            codes.append(())
        elif fields.get("type_index") == _INT and (code := compile_expression(fields.get("v_int64", ""))) is not None:
            tensors.append(-1)
            codes.append(code)
        else:
            return None
    return KernelCall(lookups[handle], tuple(tensors), tuple(codes))
