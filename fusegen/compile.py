"""Compiling a generated kernel module for sm_90a (works without a GPU) and returning its CUDA."""

from __future__ import annotations

import importlib.util
import multiprocessing
import signal
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path


def route_tilelang_logs(verbose: bool) -> None:
    """TileLang logs each compilation at INFO to stdout (its handler writes through tqdm), between the
    lines of fusegen's report. Its records go to stderr instead, INFO only when `verbose`."""
    import logging

    import tilelang  # noqa: F401  (its import installs the handler replaced here)

    logger = logging.getLogger("tilelang")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(next((h.formatter for h in logger.handlers if h.formatter), None))
    for old in list(logger.handlers):
        logger.removeHandler(old)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO if verbose else logging.WARNING)


def import_file(path: Path, module_name: str):
    """Imports a generated module from its file; TileLang reads the kernel's source text through it."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def cuda_sources(module) -> list[str]:
    """Compiles each of a kernel module's programs for its target; the device CUDA of each, in order."""
    from .runtime import compile_program

    launcher = module.launcher
    return [compile_program(program, launcher.target).get_kernel_source() for program in launcher.programs]


def cuda_sources_of_file(kernel_py: Path) -> list[str]:
    return cuda_sources(import_file(kernel_py, f"_fusegen_compile_{kernel_py.parent.name}"))


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
