"""bf16 → float32 from the 32-bit word of a bf16 pair: the low value is the word shifted left 16, the high
one the word with its low half cleared — one SHF and one LOP3 for two values, where cuda_bf16.hpp's
`__bfloat1622float2` (two `cvt.f32.bf16`) costs ptxas a PRMT and an SHF for the high one besides. Exact:
a bf16 is the top half of the float32 it widens to.

`with_words(code)` puts the function before the first kernel of a TileLang CUDA source and maps
`__bfloat1622float2` onto it; `register(marker)` makes TileLang do that (tilelang_callback_cuda_postproc) for
every kernel whose source contains `marker` — perf/probe38 compiles the `_new` copy of each spec this way
and its `_old` copy as TileLang writes it."""

from __future__ import annotations

PRELUDE = """
// perf/probe38: bf16 pairs widened from their 32-bit word (bf16_words.py).
__device__ __forceinline__ float2 probe38_bfloat1622float2(const __nv_bfloat162 pair) {
  const unsigned int word = *reinterpret_cast<const unsigned int*>(&pair);
  return make_float2(__uint_as_float(word << 16), __uint_as_float(word & 0xffff0000u));
}
#define __bfloat1622float2 probe38_bfloat1622float2
"""


def with_words(code: str) -> str:
    first_kernel = code.index('extern "C"')
    return code[:first_kernel] + PRELUDE + code[first_kernel:]


def register(marker: str = "_new_kernel(") -> None:
    import tvm_ffi

    def postproc(code, target):
        return with_words(code) if marker in code else code

    tvm_ffi.register_global_func("tilelang_callback_cuda_postproc", f=postproc, override=True)
