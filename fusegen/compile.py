"""Compiling a generated kernel module for sm_90a (works without a GPU) and returning its CUDA, with the
registers and stack frame ptxas gave each program."""

from __future__ import annotations

import importlib.util
import multiprocessing
import signal
import struct
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


def route_tilelang_logs(verbose: bool) -> None:
    """TileLang logs each compilation at INFO to stdout (its handler writes through tqdm), between the
    lines of fusegen's report. Its records go to stderr instead, INFO only when `verbose`, without its
    advice on kernels served from its memory cache (_not_cache_advice)."""
    import logging

    import tilelang  # noqa: F401  (its import installs the handler replaced here)

    logger = logging.getLogger("tilelang")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(next((h.formatter for h in logger.handlers if h.formatter), None))
    handler.addFilter(_not_cache_advice)
    for old in list(logger.handlers):
        logger.removeHandler(old)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO if verbose else logging.WARNING)


def _not_cache_advice(record) -> bool:
    """False for TileLang's warning that it served a kernel from its memory cache ("consider using
    `@tilelang.jit`"): a build compiles the same program more than once in a process by design (each launch
    bound trial of a kernel holds its other programs unchanged; after the trials the kernel is compiled again),
    and each hit saves a compile. The advice is for callers of TileLang's own API; on `fusegen build`'s stderr
    it read as a fault of the user's."""
    return not (record.name == "tilelang.cache.kernel_cache" and "in memory cache" in record.getMessage())


def import_file(path: Path, module_name: str):
    """Imports a generated module from its file; TileLang reads the kernel's source text through it."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Resources:
    """What ptxas gave a compiled program: registers a thread, and the stack frame a spill needs (0: none)."""

    registers: int
    stack_bytes: int


# The attributes of a cubin's .nv.info section (NVIDIA's ELF notes, as cuobjdump reads them): entries of a
# format byte, an attribute byte and a payload; for these two, a 16-bit size then (function symbol, value).
_NV_INFO_SIZED = 0x04
_NV_INFO_REGISTERS = 0x2F
_NV_INFO_FRAME = 0x11
_NV_INFO_PAYLOAD = {0x01: 0, 0x02: 1, 0x03: 2}  # formats of no payload, a byte, a 16-bit value


def ptxas_resources(library: Path) -> Resources | None:
    """The registers and stack frame ptxas gave the kernel of a TileLang library (the cubin embedded in
    its executable.so), read from the cubin's .nv.info attributes; None where no cubin with them is found.
    No GPU and no disassembler needed: the build reports them beside the CUDA checks."""
    try:
        data = library.read_bytes()
    except OSError:
        return None
    start = data.find(b"\x7fELF", 1)
    while start != -1:
        found = _nv_info(data, start)
        if found is not None:
            return found
        start = data.find(b"\x7fELF", start + 1)
    return None


def _nv_info(data: bytes, start: int) -> Resources | None:
    try:
        (section_table,) = struct.unpack_from("<Q", data, start + 0x28)
        entry_size, entries, names_index = struct.unpack_from("<HHH", data, start + 0x3A)
        sections = [struct.unpack_from("<IIQQQQIIQQ", data, start + section_table + k * entry_size) for k in range(entries)]
        names = start + sections[names_index][4]
        for name_offset, _, _, _, offset, size, *_ in sections:
            name_start = names + name_offset
            if data[name_start : data.index(b"\0", name_start)] != b".nv.info":
                continue
            info, values, at = data[start + offset : start + offset + size], {}, 0
            while at + 2 <= len(info):
                kind, attribute = info[at], info[at + 1]
                if kind == _NV_INFO_SIZED:
                    (length,) = struct.unpack_from("<H", info, at + 2)
                    if attribute in (_NV_INFO_REGISTERS, _NV_INFO_FRAME) and length == 8:
                        values.setdefault(attribute, []).append(struct.unpack_from("<II", info, at + 4)[1])
                    at += 4 + length
                else:
                    at += 2 + _NV_INFO_PAYLOAD.get(kind, 0)
            if _NV_INFO_REGISTERS in values:
                return Resources(max(values[_NV_INFO_REGISTERS]), max(values.get(_NV_INFO_FRAME, [0])))
    except (struct.error, ValueError, IndexError, OverflowError):  # not an ELF image after all: bytes that looked like one
        return None
    return None


def _compiled(module) -> list:
    """Each of a kernel module's programs compiled for its target (TileLang JIT kernels), in order."""
    from .runtime import compile_program

    launcher = module.launcher
    return [compile_program(program, launcher.target) for program in launcher.programs]


def compiled_programs(module) -> list[tuple[str, Resources | None]]:
    """The device CUDA of each of a kernel module's programs, in order, with what ptxas gave it."""
    return [(k.get_kernel_source(), _resources_of(k)) for k in _compiled(module)]


def _resources_of(kernel) -> Resources | None:
    """ptxas's resources from the library TileLang loaded the kernel from (a cache hit: the adapter's
    libpath) or saved it to (a fresh compile: the kernel's cache directory); None where it kept neither."""
    library = getattr(kernel.adapter, "libpath", None)
    if not library:
        cached = getattr(kernel, "_tilelang_cache_path", None)
        library = Path(cached) / "executable.so" if cached else None
    return ptxas_resources(Path(library)) if library else None


def cuda_sources(module) -> list[str]:
    """Compiles each of a kernel module's programs for its target; the device CUDA of each, in order."""
    return [k.get_kernel_source() for k in _compiled(module)]


def cuda_sources_of_file(kernel_py: Path) -> list[str]:
    return cuda_sources(import_file(kernel_py, f"_fusegen_compile_{kernel_py.parent.name}"))


def compiled_programs_of_file(kernel_py: Path) -> list[tuple[str, Resources | None]]:
    return compiled_programs(import_file(kernel_py, f"_fusegen_compile_{kernel_py.parent.name}"))


@contextmanager
def workers_leave_interrupts_to_us():
    """Worker processes spawned inside this block ignore Ctrl-C from their first instruction: it reaches
    the whole terminal process group, and the caller stops its workers itself. (Python keeps a SIGINT it
    starts with ignored ignored. Ignoring it from a pool initializer left a window: a worker still
    importing when Ctrl-C came printed its own traceback.) Outside the main thread, where signal handlers
    cannot be set, it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def in_worker_processes(function, arguments: list[tuple], jobs: int) -> list:
    """function(*args) for each tuple of arguments in spawned worker processes, results in order. TileLang
    compiles are CPU-bound and each worker fills TileLang's disk cache, from which the calling process
    then loads every program instead of compiling them one by one."""
    if not arguments:
        return []
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=max(1, min(jobs, len(arguments))), mp_context=context) as pool:
        with workers_leave_interrupts_to_us():  # a spawn-context pool starts its workers as tasks are submitted
            futures = [pool.submit(function, *args) for args in arguments]
        return [future.result() for future in futures]


def import_package(directory: Path, package_name: str):
    """Imports a generated kernel directory as a package (its reference imports `.kernel`)."""
    spec = importlib.util.spec_from_file_location(package_name, directory / "__init__.py", submodule_search_locations=[str(directory)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[package_name] = module
    spec.loader.exec_module(module)
    return module
