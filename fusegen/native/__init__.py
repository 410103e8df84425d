"""The C++ launch path (launch.cpp): a Python extension whose `launch` allocates a kernel's outputs and calls
its compiled program in one C call — the program's kernel function itself where kernel_call.py reads what
the program's host code passes it — built once per machine into the cache.

Why C++: on the H200 host a three-output kernel(...) sat at 2.5-2.8 × one `torch.add`, its outputs'
allocation from Python alone at 1.5-2 × (BENCHMARKS.md, issue 15; perf/proto/native_cost.py); small outputs
allocated as one block and cut into tensors in C++ cost one allocation. The library is compiled with the C++
compiler TileLang itself needs (`CXX`, else g++) against this process's Python, torch and tvm_ffi; where it
cannot be built (no compiler, no Python headers), or FUSEGEN_NO_COMPILE forbids building it, kernels launch
through Python and `unavailable()` says why.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sysconfig
import tempfile
import warnings
from pathlib import Path

import torch

from .kernel_call import KernelCall, kernel_call

SOURCE = Path(__file__).with_name("launch.cpp")
LIBRARY_NAME = "fusegen_native.so"
# What launch() does with its tensors: allocate the outputs separately (a torch op's, which must not alias),
# allocate small ones as views of one block (kernel(...) called directly), or launch into the outputs passed
# after the inputs.
SEPARATE, SHARED, INTO = 0, 1, 2
_failure: str | None = None
_extension = None


def _toolchain() -> tuple[str, list[str]]:
    """The compiler and the flags that build launch.cpp against this process's Python, torch and tvm_ffi."""
    import tvm_ffi.libinfo
    from torch.utils.cpp_extension import include_paths

    compiler = os.environ.get("CXX", "g++")
    torch_lib = Path(torch.__file__).parent / "lib"
    tvm_ffi_lib = Path(tvm_ffi.libinfo.find_libtvm_ffi()).parent
    flags = [
        "-O2",
        "-std=c++20",
        "-shared",
        "-fPIC",
        f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
        f"-I{sysconfig.get_paths()['include']}",
        *(f"-I{path}" for path in include_paths()),
        f"-I{tvm_ffi.libinfo.find_include_path()}",
        str(SOURCE),
        f"-L{torch_lib}",
        "-lc10",
        "-ltorch_cpu",
        "-ltorch_python",
        f"-L{tvm_ffi_lib}",
        "-ltvm_ffi",
        f"-Wl,-rpath,{torch_lib}",
        f"-Wl,-rpath,{tvm_ffi_lib}",
    ]
    return compiler, flags


def _library_path() -> Path:
    """Where the build for this source, Python, torch, tvm_ffi and compiler (and their paths) lives: a change
    to any is a new build."""
    import tvm_ffi

    from ..jit import cache_dir

    compiler, flags = _toolchain()
    digest = hashlib.sha256(SOURCE.read_bytes())
    digest.update("\0".join([sysconfig.get_config_var("SOABI") or "", torch.__version__, tvm_ffi.__version__, compiler, *flags]).encode())
    return cache_dir() / "native" / digest.hexdigest()[:16] / LIBRARY_NAME


def _build(path: Path) -> None:
    """Compiles into a temporary file beside `path` and renames it into place under the directory's lock,
    so concurrent processes build once and never load half a library."""
    from ..build import file_lock

    path.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(path.parent / "build.lock", f"the lock of {path.parent}", lambda message: None):
        if path.exists():
            return
        compiler, flags = _toolchain()
        if shutil.which(compiler) is None:
            raise RuntimeError(f"no C++ compiler '{compiler}' (set CXX)")
        headers = Path(sysconfig.get_paths()["include"])
        if not (headers / "Python.h").is_file():
            raise RuntimeError(f"no Python headers in {headers} (install this Python's development package)")
        handle, staging = tempfile.mkstemp(dir=path.parent, suffix=".so")
        os.close(handle)
        try:
            completed = subprocess.run([compiler, *flags, "-o", staging], capture_output=True, text=True)
            if completed.returncode:
                raise RuntimeError(f"{compiler} failed: {completed.stderr.strip()[-2000:]}")
            os.replace(staging, path)
        finally:
            if os.path.exists(staging):
                os.remove(staging)


@functools.cache
def available() -> bool:
    """Loads the library (building it first if needed) once per process; False, with a warning saying why,
    where it cannot be had."""
    global _failure, _extension
    from ..jit import NO_COMPILE_ENV, compiling_forbidden

    try:
        path = _library_path()
        if not path.exists():
            if compiling_forbidden():
                raise RuntimeError(f"it is not built in {path.parent} and {NO_COMPILE_ENV} forbids building it")
            _build(path)
        spec = importlib.util.spec_from_file_location("fusegen_native", path)
        extension = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(extension)
        _extension = extension
    except (OSError, RuntimeError, ImportError) as error:
        _failure = str(error)
        warnings.warn(f"fusegen: the C++ launch path is unavailable ({_failure}); kernels launch through Python", stacklevel=2)
        return False
    return True


def unavailable() -> str | None:
    """Why the C++ launch path is not in use, or None where it is (or has not been asked for)."""
    return _failure


def kernel_of(compiled):
    """The kernel function of a compiled TileLang program and its KernelCall (kernel_call.py), for `register`;
    None where its host code is not one kernel_call reads (the program is then called through it)."""
    call = kernel_call(compiled.adapter.get_host_source() or "")
    if call is None:
        return None
    module = compiled.adapter.get_exportable_executable()
    if not hasattr(module, "get_function"):  # a runtime.Executable: the module it compiled to
        module = module.jit()
    return module.get_function(call.kernel, query_imports=True), call


def register(executable, outputs, kernel=None) -> int:
    """Registers a compiled program's tvm_ffi entry and its outputs (runtime.TensorSpec, each (m,) or (m, n),
    row or column layout) with the library; returns the id `launch` takes. `kernel` (kernel_of's answer) lets
    launches call the program's kernel function directly. Call only after available() returned True."""
    templates, columns = [], []
    for spec in outputs:
        if spec.shape[0] != "m" or len(spec.shape) > 2:
            raise AssertionError(f"output '{spec.name}' is {spec.shape}: the C++ launch path sizes (m,) and (m, n) outputs")
        templates.append(torch.empty((0, *spec.shape[1:]), dtype=spec.dtype, device="meta"))
        columns.append(int(spec.layout == "column"))
    function, call = kernel if kernel is not None else (None, KernelCall("", (), ()))
    handle = function.__chandle__() if function is not None else 0
    return _extension.register_program(executable.__chandle__(), templates, columns, handle, call.tensors, call.codes)


def launch():
    """`launch(id, mode, *tensors)`: with SEPARATE or SHARED, the inputs: allocates the outputs (views of one
    allocation with SHARED where they are small), launches and returns them as a tuple; with INTO, the inputs
    and then the outputs: launches into them and returns True. Returns None without launching where a tensor
    does not start on a 16-byte boundary. The extension's C function itself: no Python frame around it."""
    return _extension.launch


__all__ = ["INTO", "SEPARATE", "SHARED", "available", "kernel_of", "launch", "register", "unavailable"]
