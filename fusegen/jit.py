"""`fusegen.load`: a kernel module from a spec, built on demand into a per-user cache.

The FlashInfer/Triton JIT pattern: try to import the cached build; on a miss take a cross-process lock on
the kernel's identity, look again (another process may have built it while this one waited), build in a
staging directory inside the cache and install it with one rename, so a reader sees a whole build or
none. An entry whose files do not all record the identity is not trusted: it is rebuilt.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from .build import file_lock, plan_spec, stage
from .compile import import_package
from .spec import KernelSpec, held_to_rules, load_spec, parse_spec
from .tuning import UNTUNED, Tuning

CACHE_ENV = "FUSEGEN_CACHE_DIR"
NO_COMPILE_ENV = "FUSEGEN_NO_COMPILE"
STAGING_PREFIX = ".staging-"
# The identity ends every header line `# identity: ...` of a generated module; the package's
# __init__.py is the file that imports check_identity, so it is checked here before it runs.
IDENTITY_LINE = "# identity: "


class CacheMiss(RuntimeError):
    """fusegen.load found no build of the spec and FUSEGEN_NO_COMPILE forbids making one."""


def cache_dir() -> Path:
    """FUSEGEN_CACHE_DIR, or ~/.cache/fusegen."""
    configured = os.environ.get(CACHE_ENV)
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "fusegen"


@functools.cache
def generator_digest() -> str:
    """A digest of fusegen's own source. The cache keeps each generator's builds apart: a build from a
    fusegen whose planner or emitters have since changed (its version string unchanged) has the same
    identity but not the same kernel, and must not be imported for this one."""
    package = Path(__file__).parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def compiling_forbidden() -> bool:
    return os.environ.get(NO_COMPILE_ENV, "") not in ("", "0")


def _quiet(message: str) -> None:
    """The default `notify` of load(): a library caller hears nothing."""


def _spec_of(source) -> tuple[KernelSpec, str, str]:
    """(spec, its TOML text, how errors name it). A str with a line break is TOML text (a spec has at
    least two key lines, and TOML puts each on its own line); any other str is a path."""
    if isinstance(source, KernelSpec):
        return held_to_rules(source, "<KernelSpec>"), "", "<KernelSpec>"
    if isinstance(source, str) and "\n" in source:
        return parse_spec(source, "<spec text>"), source, "<spec text>"
    if isinstance(source, (str, os.PathLike)):
        spec, text = load_spec(Path(source))
        return spec, text, str(source)
    raise TypeError(f"fusegen.load takes a path to a .toml spec, TOML text or a KernelSpec, got {type(source).__name__}")


def _intact(directory: Path, identity: str) -> bool:
    """Whether every file of a cached build records `identity` (a crash cannot leave half a build, the
    install being one rename, but a directory edited or filled by something else can)."""
    from .runtime import MixedKernelError, check_identity  # torch: only once a kernel is looked for

    try:
        with open(directory / "__init__.py", encoding="utf-8") as handle:
            handle.readline()
            if handle.readline().rstrip("\n") != IDENTITY_LINE + identity:
                return False
        check_identity(str(directory / "__init__.py"), identity)
    except (OSError, UnicodeDecodeError, MixedKernelError):
        return False
    return (directory / "kernel.cu").is_file()


def _module_name(identity: str) -> str:
    return "_fusegen_kernel_" + identity.replace("-", "_")


def _imported(directory: Path, identity: str):
    """The cached build as a module, or None when there is none to trust. One import per process: a
    second load of the identity returns the same module."""
    name = _module_name(identity)
    if name in sys.modules:
        return sys.modules[name]
    if not _intact(directory, identity):
        return None
    try:
        return import_package(directory, name)
    except BaseException:
        sys.modules.pop(name, None)
        raise


def _install(plan, cache: Path, directory: Path, notify: Callable[[str], None]) -> None:
    """Builds into a staging directory beside `directory` (one file system, so the rename is atomic)
    and renames it into place; an untrusted entry is moved aside first and removed."""
    staging = Path(tempfile.mkdtemp(dir=cache, prefix=f"{STAGING_PREFIX}{os.getpid()}-"))
    try:
        stage([plan], staging, jobs=1, notify=notify)
        if directory.exists():
            discarded = staging / "untrusted"
            os.replace(directory, discarded)
        os.replace(staging / plan.name, directory)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def load(source, *, tuning: Tuning = UNTUNED, notify: Callable[[str], None] = _quiet):
    """The kernel module of a spec (`kernel`, `reference`, `Outputs`, `launcher`, ...), built on demand.

    `source` is a path to a .toml spec, TOML text or a KernelSpec. The build goes into
    `<FUSEGEN_CACHE_DIR or ~/.cache/fusegen>/<generator>/<identity>/`, keyed by the kernel's identity (its
    name and a hash of the spec and fusegen's version) under a digest of fusegen's own source
    (generator_digest), so the same spec from any source is built once per user and fusegen, and imported
    once per process. With FUSEGEN_NO_COMPILE=1 a spec not in the cache raises CacheMiss
    instead of compiling. Raises SpecError for a bad spec; `notify` hears a wait for another process's
    build and each compilation."""
    spec, text, shown = _spec_of(source)
    plan = plan_spec(spec, text, shown, tuning)
    cache = cache_dir() / generator_digest()
    directory = cache / plan.identity
    module = _imported(directory, plan.identity)
    if module is not None:
        return module
    if compiling_forbidden():
        raise CacheMiss(
            f"{shown}: kernel '{plan.name}' ({plan.identity}) is not built in {cache}, and {NO_COMPILE_ENV} "
            f"forbids compiling at run time; build it ahead with fusegen.load where compiling is allowed "
            f"(with {CACHE_ENV} pointing where this process reads)"
        )
    cache.mkdir(parents=True, exist_ok=True)
    with file_lock(cache / f"{plan.identity}.lock", f"the cache lock of {plan.identity}", notify):
        module = _imported(directory, plan.identity)
        if module is None:
            _install(plan, cache, directory, notify)
            module = _imported(directory, plan.identity)
    if module is None:
        raise AssertionError(f"{directory}: a build just installed does not record {plan.identity}")
    return module
