"""fusegen: a declarative generator of fused TileLang kernels for NVIDIA Hopper."""

__version__ = "0.1.0"
