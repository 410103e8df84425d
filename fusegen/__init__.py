"""fusegen: a declarative generator of fused TileLang kernels for NVIDIA Hopper.

The Python API: `load` (a kernel module from a spec, built on demand into a per-user cache), `build`
(`fusegen build`: specs into a package directory), `load_spec`/`parse_spec` (a spec from a file or
TOML text, checked)."""

__version__ = "0.1.0"

from . import build  # noqa: E402  (callable: fusegen.build(paths, out) runs build.build)
from .jit import CacheMiss, load  # noqa: E402
from .spec import KernelSpec, load_spec, parse_spec  # noqa: E402

__all__ = ["CacheMiss", "KernelSpec", "build", "load", "load_spec", "parse_spec", "__version__"]
