"""A compiled stand-in for a TileLang program (stub_program.c), for the CPU tests of the launch paths: a
tvm_ffi function that records which buffers each call was handed and fills its outputs."""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

SOURCE = Path(__file__).with_name("stub_program.c")
CALLS, ARGS = 64, 16  # STUB_CALLS, STUB_ARGS


class StubProgram:
    """`function` is what the launcher calls, `kernel` a kernel function the C++ path may call instead;
    `calls(since)` the data pointers (a kernel function's integers too) of each call's arguments, oldest
    first; `inputs` how many leading arguments `function` leaves unwritten."""

    def __init__(self, directory: Path):
        import tvm_ffi
        import tvm_ffi.libinfo

        library = directory / "stub_program.so"
        include = tvm_ffi.libinfo.find_include_path()
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", f"-I{include}", str(SOURCE), "-o", str(library)], check=True)
        module = tvm_ffi.load_module(str(library))
        self.function = module["stub"]
        self.kernel = module["stub_kernel"]  # a kernel function: called with what the host code would pack
        self._symbols = ctypes.CDLL(str(library))  # the same loaded library: its globals are the program's

    def _global(self, kind, name):
        return kind.in_dll(self._symbols, name)

    @property
    def inputs(self) -> int:
        return self._global(ctypes.c_int32, "stub_inputs").value

    @inputs.setter
    def inputs(self, count: int) -> None:
        self._global(ctypes.c_int32, "stub_inputs").value = count

    @property
    def launches(self) -> int:
        """Calls so far."""
        return self._global(ctypes.c_int64, "stub_launches").value

    def calls(self, since: int = 0) -> list[tuple[int, ...]]:
        """The calls after the first `since`, oldest first; asserts that none has left the record."""
        launches = self.launches
        assert launches - since <= CALLS, f"{launches - since} calls since {since}: the stub records the last {CALLS}"
        counts = (ctypes.c_int32 * CALLS).in_dll(self._symbols, "stub_counts")
        data = ((ctypes.c_void_p * ARGS) * CALLS).in_dll(self._symbols, "stub_data")
        first = max(since, launches - CALLS)
        return [tuple(data[call % CALLS][i] or 0 for i in range(counts[call % CALLS])) for call in range(first, launches)]
