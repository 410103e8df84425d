// perf/probe87: can column-major FP8 scales in small groups on wide rows reach the speed of row-major ones,
// and which store pattern does it take?
//
// The draws' slowest family (NOTES.md, "Where untuned draws fall short"): RMSNorm → FP8 in groups of 8–16
// with column-major scales on rows of 5120+ columns runs 0.5–0.7 × copy, where the same chain with row-major
// scales runs ~0.9. A group's scales of 8 consecutive rows share a 32-byte sector.
//
// Run 1 (session 40, README.md) timed one row a block (direct, row-major), four rows staged (fusegen's
// schedule.sector_rows), and blocks looping over a sector's 8 consecutive rows through a cp.async ring: the
// loops lost to the four staged rows on every shape (0.82 against 1.06 of run 1's copy on 5120), and the
// four staged rows left a quarter of the way to row-major. That first version is in git history (41bab3a).
//
// Run 2 asks whether the scale stores cost by their count (one L2 request a run, whatever its length):
// blocks of 512 threads staging R rows (runs of 4R bytes, R = 2, 4, 8 where a thread's values fit its
// registers), beside one row a block and row-major scales on the same thread shapes. Run 3: blocks of 4 rows
// looping 1–8 times over consecutive rows, the scales stored after the last as runs of 16–128 bytes. Run 4:
// x read and q written evict-first, the scales evict-last (does DRAM see partial sectors?). Against a float4
// copy kernel of 1 GiB (run 1 used cudaMemcpy, 2.7 TB/s). Every pattern's Q and scales are compared bit for
// bit with the first's (`direct`, checked against the host on three rows) before it is timed; patterns on
// another thread shape sum the squares in another order and print DIFFERS: they are not verified here.
//
//     nvcc -arch=sm_90a -O3 -std=c++17 -o /tmp/column_scales perf/probe87/column_scales.cu
//     /tmp/column_scales RUN                                  # RUN 2, 3 or 4 (default)
//     PROBE87_PROFILE=1 ncu --clock-control none -k regex:rows_kernel --csv --metrics … /tmp/column_scales 4
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include "../proto/graph_timing.cuh"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

constexpr float kFp8Max = 448.0f;
constexpr float kAmaxFloor = 1e-10f;
constexpr float kEps = 1e-6f;

enum Pattern { kDirect, kRowMajor, kStaged, kDirectHinted, kStagedHinted };

// Hinted patterns: x read and q written evict-first, the scales written evict-last, so a partly written
// scale sector stays in L2 until the neighbouring rows' blocks fill it (does DRAM see partial sectors?).
__host__ __device__ constexpr bool hinted(Pattern p) { return p == kDirectHinted || p == kStagedHinted; }
__device__ inline void store_scale(float* at, float value, bool evict_last) {
  if (evict_last) {
    asm volatile(
        "{\n .reg .b64 policy;\n createpolicy.fractional.L2::evict_last.b64 policy, 1.0;\n"
        " st.global.L2::cache_hint.f32 [%0], %1, policy;\n}" ::"l"(at), "f"(value) : "memory");
  } else {
    *at = value;
  }
}

// A row of H fp32 values on THREADS threads: thread t holds groups t, t + THREADS, … (G contiguous values
// each, two 16-byte vectors for G = 8), so a group's amax needs no shuffle.
template <int H, int G, int THREADS>
struct Row {
  static constexpr int kGroups = H / G;
  static constexpr int kPerThread = kGroups / THREADS;
  static_assert(kGroups % THREADS == 0, "whole groups a thread");
  static_assert(G % 4 == 0, "float4 vectors");
  float v[kPerThread][G];

  __device__ void load(const float* row, int tid, bool evict_first) {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i)
#pragma unroll
      for (int e = 0; e < G; e += 4) {
        const float4* from = reinterpret_cast<const float4*>(row + (i * THREADS + tid) * G + e);
        *reinterpret_cast<float4*>(&v[i][e]) = evict_first ? __ldcs(from) : *from;
      }
  }

  // RMSNorm then FP8: the reduction over `warps` warps of this row (partials in `exchange`), then each
  // group's scale and quantised values. Returns nothing; the caller stores q from `q` and scales from `scale`.
  __device__ void norm_quant(const float* __restrict__ weight, int tid, float* exchange, __nv_fp8_storage_t (&q)[kPerThread][G],
                             float (&scale)[kPerThread]) {
    float sumsq = 0.f;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i)
#pragma unroll
      for (int e = 0; e < G; ++e) sumsq += v[i][e] * v[i][e];
#pragma unroll
    for (int o = 16; o; o >>= 1) sumsq += __shfl_xor_sync(0xffffffff, sumsq, o);
    if ((tid & 31) == 0) exchange[tid >> 5] = sumsq;
    __syncthreads();
    float total = 0.f;
#pragma unroll
    for (int w = 0; w < THREADS / 32; ++w) total += exchange[w];
    const float rstd = rsqrtf(total / H + kEps);
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      float amax = 0.f;
#pragma unroll
      for (int e = 0; e < G; ++e) {
        v[i][e] = v[i][e] * rstd * weight[(i * THREADS + tid) * G + e];
        amax = fmaxf(amax, fabsf(v[i][e]));
      }
      scale[i] = fmaxf(amax, kAmaxFloor) / kFp8Max;
      const float inverse = 1.0f / scale[i];
#pragma unroll
      for (int e = 0; e < G; ++e) q[i][e] = __nv_cvt_float_to_fp8(v[i][e] * inverse, __NV_SATFINITE, __NV_E4M3);
    }
  }

  __device__ static void store_q(__nv_fp8_storage_t* qrow, int tid, const __nv_fp8_storage_t (&q)[kPerThread][G], bool evict_first) {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i)
#pragma unroll
      for (int e = 0; e < G; e += 8) {
        uint2* to = reinterpret_cast<uint2*>(qrow + (i * THREADS + tid) * G + e);
        const uint2 value = *reinterpret_cast<const uint2*>(&q[i][e]);
        if (evict_first) __stcs(to, value);
        else *to = value;
      }
  }
};

// `rows` rows a block of rows × THREADS threads, `iterations` times over (the block's rows · iterations are
// consecutive); scales direct, row-major, or staged in shared memory (groups × rows · iterations) and stored
// after the last iteration by consecutive threads as runs of rows · iterations.
template <int H, int G, int THREADS, Pattern P, int ROWS, int ITERATIONS>
__global__ void __launch_bounds__(THREADS* ROWS) rows_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                                                            __nv_fp8_storage_t* __restrict__ q, float* __restrict__ scales, int m, int padded_m) {
  using R = Row<H, G, THREADS>;
  constexpr int kRun = ROWS * ITERATIONS;
  __shared__ float exchange[2][ROWS][THREADS / 32];  // by iteration parity: the next row's partials may land before a slow warp reads these
  extern __shared__ float staged[];                  // [groups][kRun] when staged
  const int sub = threadIdx.x / THREADS, tid = threadIdx.x % THREADS;
  const int first = blockIdx.x * kRun;
#pragma unroll 1
  for (int it = 0; it < ITERATIONS; ++it) {
    const int row = first + it * ROWS + sub;
    R r;
    alignas(16) __nv_fp8_storage_t qv[R::kPerThread][G];
    float sv[R::kPerThread];
    if (row < m) r.load(x + (long)row * H, tid, hinted(P));
    r.norm_quant(weight, tid, exchange[it & 1][sub], qv, sv);
    if (row < m) R::store_q(q + (long)row * H, tid, qv, hinted(P));
#pragma unroll
    for (int i = 0; i < R::kPerThread; ++i) {
      const int g = i * THREADS + tid;
      if ((P == kDirect || P == kDirectHinted) && row < m) store_scale(scales + (long)g * padded_m + row, sv[i], hinted(P));
      if (P == kRowMajor && row < m) scales[(long)row * R::kGroups + g] = sv[i];
      if (P == kStaged || P == kStagedHinted) staged[g * kRun + it * ROWS + sub] = sv[i];
    }
  }
  if (P == kStaged || P == kStagedHinted) {
    __syncthreads();
    for (int k = threadIdx.x; k < R::kGroups * kRun; k += THREADS * ROWS) {
      const int g = k / kRun, i = k % kRun, token = first + i;
      if (token < m) store_scale(scales + (long)g * padded_m + token, staged[k], hinted(P));
    }
  }
}

struct Buffers {
  float *x, *weight, *scales;
  __nv_fp8_storage_t* q;
};

// One pattern's launch: `rows` rows a block of rows × THREADS threads, `iterations` times over.
template <int H, int G, int THREADS, Pattern P, int ROWS, int ITERATIONS>
void launch_rows(const Buffers& b, int m, int padded_m, cudaStream_t stream) {
  auto kernel = rows_kernel<H, G, THREADS, P, ROWS, ITERATIONS>;
  const int shared = P == kStaged || P == kStagedHinted ? H / G * ROWS * ITERATIONS * (int)sizeof(float) : 0;
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
  const int rows = ROWS * ITERATIONS;
  kernel<<<(m + rows - 1) / rows, ROWS * THREADS, shared, stream>>>(b.x, b.weight, b.q, b.scales, m, padded_m);
  CHECK(cudaGetLastError());
}

struct Case {
  const char* name;
  Pattern pattern;
  void (*launch)(const Buffers&, int, int, cudaStream_t);
};

// PROBE87_PROFILE=1: each case launched once, untimed, for ncu (no graphs, no copy).
const bool profiling = getenv("PROBE87_PROFILE") != nullptr;

// Every case on one shape; the first must be a `direct` one (the reference the others are compared with).
template <int H, int G>
void shape(int m, double copy_tb, cudaStream_t stream, const std::vector<Case>& cases) {
  using R = Row<H, G, 1>;  // only its kGroups
  const int padded_m = (m + 3) / 4 * 4;
  Buffers b;
  CHECK(cudaMalloc(&b.x, (size_t)m * H * sizeof(float)));
  CHECK(cudaMalloc(&b.weight, H * sizeof(float)));
  CHECK(cudaMalloc(&b.q, (size_t)m * H));
  CHECK(cudaMalloc(&b.scales, (size_t)R::kGroups * padded_m * sizeof(float)));
  std::vector<float> host((size_t)m * H);
  uint32_t state = 12345u + H;
  for (auto& v : host) {
    state = state * 1664525u + 1013904223u;
    v = ((state >> 8) * (1.0f / 16777216.0f) - 0.5f) * 6.0f;
  }
  CHECK(cudaMemcpy(b.x, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  std::vector<float> w(H);
  for (int j = 0; j < H; ++j) w[j] = 0.5f + (j % 97) / 97.0f;
  CHECK(cudaMemcpy(b.weight, w.data(), H * sizeof(float), cudaMemcpyHostToDevice));
  const double bytes = (double)m * H * sizeof(float) + (double)m * H + (double)m * R::kGroups * sizeof(float);
  std::vector<uint8_t> want_q, got_q((size_t)m * H);
  std::vector<float> want_s, got_s((size_t)R::kGroups * padded_m);
  for (const Case& c : cases) {
    // Poisoned on the kernel's own stream: a cudaMemset on the legacy stream is not ordered before it.
    CHECK(cudaMemsetAsync(b.q, 0xff, (size_t)m * H, stream));
    CHECK(cudaMemsetAsync(b.scales, 0xff, (size_t)R::kGroups * padded_m * sizeof(float), stream));
    c.launch(b, m, padded_m, stream);
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaMemcpy(got_q.data(), b.q, got_q.size(), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(got_s.data(), b.scales, got_s.size() * sizeof(float), cudaMemcpyDeviceToHost));
    if (c.pattern == kRowMajor) {  // compared in the column-major order
      std::vector<float> column(got_s.size());
      for (int t = 0; t < m; ++t)
        for (int g = 0; g < R::kGroups; ++g) column[(size_t)g * padded_m + t] = got_s[(size_t)t * R::kGroups + g];
      for (int t = m; t < padded_m; ++t)
        for (int g = 0; g < R::kGroups; ++g) column[(size_t)g * padded_m + t] = want_s[(size_t)g * padded_m + t];
      got_s = column;
    }
    bool same = true;
    if (&c == &cases[0]) {
      want_q = got_q;
      want_s = got_s;
      // The arithmetic itself, loosely (rsqrtf is not the host's): each group's scale on three rows.
      for (int t : {0, 1, m - 1}) {
        double sumsq = 0;
        for (int j = 0; j < H; ++j) sumsq += (double)host[(size_t)t * H + j] * host[(size_t)t * H + j];
        const double rstd = 1.0 / sqrt(sumsq / H + kEps);
        for (int g = 0; g < R::kGroups; ++g) {
          double amax = 0;
          for (int e = 0; e < G; ++e) amax = std::max(amax, fabs(host[(size_t)t * H + g * G + e] * rstd * w[g * G + e]));
          const double expected = std::max(amax, (double)kAmaxFloor) / kFp8Max;
          if (!(fabs(want_s[(size_t)g * padded_m + t] - expected) <= 1e-4 * expected)) {  // a NaN fails too
            printf("row %d group %d: scale %g, expected %g\n", t, g, want_s[(size_t)g * padded_m + t], expected);
            exit(1);
          }
        }
      }
    } else {
      same = memcmp(want_q.data(), got_q.data(), got_q.size()) == 0;
      for (int g = 0; g < R::kGroups && same; ++g) same = memcmp(&want_s[(size_t)g * padded_m], &got_s[(size_t)g * padded_m], m * sizeof(float)) == 0;
    }
    if (profiling) {  // under ncu: the checked launch above is the one profiled
      printf("%s checked: %s\n", c.name, same ? "matches direct" : "DIFFERS from direct");
      continue;
    }
    const float us = graph_median_us([&] { c.launch(b, m, padded_m, stream); }, 20, stream);
    printf("fp32 RMSNorm -> FP8 g%-3d %6d x %5d  %-16s %8.1f us  %.3f x copy  %s\n", G, m, H, c.name, us,
           bytes / (us * 1e-6) / 1e12 / copy_tb, same ? "matches direct" : "DIFFERS from direct");
  }
  CHECK(cudaFree(b.x));
  CHECK(cudaFree(b.weight));
  CHECK(cudaFree(b.q));
  CHECK(cudaFree(b.scales));
}

// Cases named by pattern, rows a block and threads a row, so shapes that share a thread shape line up.
#define ROWS_CASE(H, G, THREADS, P, ROWS, NAME) Case{NAME, P, launch_rows<H, G, THREADS, P, ROWS, 1>}
#define LOOP_CASE(H, G, THREADS, P, ROWS, ITERATIONS, NAME) Case{NAME, P, launch_rows<H, G, THREADS, P, ROWS, ITERATIONS>}

int main(int argc, char** argv) {
  const int run = argc > 1 ? atoi(argv[1]) : 4;
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const double copy_tb = profiling ? 1.0 : copy_ceiling_tb(sms, stream);  // under ncu nothing is timed
  if (run == 2) {  // runs of 8, 16 and 32 bytes at 512 threads a block, against row-major on the same shapes
    shape<5120, 8>(16384, copy_tb, stream,
                   {ROWS_CASE(5120, 8, 128, kDirect, 1, "direct 1x128"), ROWS_CASE(5120, 8, 128, kRowMajor, 1, "rowmajor 1x128"),
                    ROWS_CASE(5120, 8, 128, kDirect, 4, "direct 4x128"), ROWS_CASE(5120, 8, 128, kRowMajor, 4, "rowmajor 4x128"),
                    ROWS_CASE(5120, 8, 128, kStaged, 4, "staged 4x128"), ROWS_CASE(5120, 8, 64, kDirect, 8, "direct 8x64"),
                    ROWS_CASE(5120, 8, 64, kRowMajor, 8, "rowmajor 8x64"), ROWS_CASE(5120, 8, 64, kStaged, 8, "staged 8x64")});
    shape<10240, 8>(16384, copy_tb, stream,
                    {ROWS_CASE(10240, 8, 256, kDirect, 1, "direct 1x256"), ROWS_CASE(10240, 8, 256, kRowMajor, 1, "rowmajor 1x256"),
                     ROWS_CASE(10240, 8, 256, kRowMajor, 2, "rowmajor 2x256"), ROWS_CASE(10240, 8, 256, kStaged, 2, "staged 2x256"),
                     ROWS_CASE(10240, 8, 128, kRowMajor, 4, "rowmajor 4x128"), ROWS_CASE(10240, 8, 128, kStaged, 4, "staged 4x128")});
    shape<4096, 16>(16384, copy_tb, stream,
                    {ROWS_CASE(4096, 16, 128, kDirect, 1, "direct 1x128"), ROWS_CASE(4096, 16, 128, kRowMajor, 1, "rowmajor 1x128"),
                     ROWS_CASE(4096, 16, 128, kRowMajor, 4, "rowmajor 4x128"), ROWS_CASE(4096, 16, 128, kStaged, 4, "staged 4x128"),
                     ROWS_CASE(4096, 16, 64, kRowMajor, 8, "rowmajor 8x64"), ROWS_CASE(4096, 16, 64, kStaged, 8, "staged 8x64")});
  } else if (run == 3) {  // blocks looping 1–8 times over their rows, the scales stored after the last as runs of 16–128 bytes
    shape<5120, 8>(16384, copy_tb, stream,
                   {ROWS_CASE(5120, 8, 128, kDirect, 1, "direct 1x128"), ROWS_CASE(5120, 8, 128, kRowMajor, 1, "rowmajor 1x128"),
                    ROWS_CASE(5120, 8, 128, kRowMajor, 4, "rowmajor 4x128"), ROWS_CASE(5120, 8, 128, kStaged, 4, "staged 4x128"),
                    LOOP_CASE(5120, 8, 128, kRowMajor, 4, 2, "rowmajor 4x128 x2"), LOOP_CASE(5120, 8, 128, kStaged, 4, 2, "staged 4x128 x2"),
                    LOOP_CASE(5120, 8, 128, kRowMajor, 4, 4, "rowmajor 4x128 x4"), LOOP_CASE(5120, 8, 128, kStaged, 4, 4, "staged 4x128 x4"),
                    LOOP_CASE(5120, 8, 128, kRowMajor, 4, 8, "rowmajor 4x128 x8"), LOOP_CASE(5120, 8, 128, kStaged, 4, 8, "staged 4x128 x8"),
                    ROWS_CASE(5120, 8, 64, kRowMajor, 8, "rowmajor 8x64"), ROWS_CASE(5120, 8, 64, kStaged, 8, "staged 8x64")});
    shape<10240, 8>(16384, copy_tb, stream,
                    {ROWS_CASE(10240, 8, 256, kDirect, 1, "direct 1x256"), ROWS_CASE(10240, 8, 256, kRowMajor, 1, "rowmajor 1x256"),
                     ROWS_CASE(10240, 8, 256, kRowMajor, 2, "rowmajor 2x256"), ROWS_CASE(10240, 8, 256, kStaged, 2, "staged 2x256"),
                     LOOP_CASE(10240, 8, 256, kStaged, 2, 2, "staged 2x256 x2"), LOOP_CASE(10240, 8, 256, kStaged, 2, 4, "staged 2x256 x4"),
                     LOOP_CASE(10240, 8, 256, kRowMajor, 2, 8, "rowmajor 2x256 x8"), LOOP_CASE(10240, 8, 256, kStaged, 2, 8, "staged 2x256 x8")});
    shape<4096, 16>(16384, copy_tb, stream,
                    {ROWS_CASE(4096, 16, 128, kDirect, 1, "direct 1x128"), ROWS_CASE(4096, 16, 128, kRowMajor, 1, "rowmajor 1x128"),
                     ROWS_CASE(4096, 16, 128, kStaged, 4, "staged 4x128"), LOOP_CASE(4096, 16, 128, kStaged, 4, 2, "staged 4x128 x2"),
                     LOOP_CASE(4096, 16, 128, kRowMajor, 4, 8, "rowmajor 4x128 x8"), LOOP_CASE(4096, 16, 128, kStaged, 4, 8, "staged 4x128 x8")});
  } else {  // run 4 (and the ncu run): x read and q written evict-first, scales evict-last, against the same unhinted
    shape<5120, 8>(16384, copy_tb, stream,
                   {ROWS_CASE(5120, 8, 128, kDirect, 1, "direct 1x128"), ROWS_CASE(5120, 8, 128, kDirectHinted, 1, "direct hinted 1x128"),
                    ROWS_CASE(5120, 8, 128, kRowMajor, 1, "rowmajor 1x128"), ROWS_CASE(5120, 8, 128, kStaged, 4, "staged 4x128"),
                    ROWS_CASE(5120, 8, 128, kStagedHinted, 4, "staged hinted 4x128")});
    shape<10240, 8>(16384, copy_tb, stream,
                    {ROWS_CASE(10240, 8, 256, kDirect, 1, "direct 1x256"), ROWS_CASE(10240, 8, 256, kDirectHinted, 1, "direct hinted 1x256"),
                     ROWS_CASE(10240, 8, 256, kRowMajor, 1, "rowmajor 1x256"), ROWS_CASE(10240, 8, 256, kStaged, 2, "staged 2x256"),
                     ROWS_CASE(10240, 8, 256, kStagedHinted, 2, "staged hinted 2x256")});
    shape<4096, 16>(16384, copy_tb, stream,
                    {ROWS_CASE(4096, 16, 128, kDirect, 1, "direct 1x128"), ROWS_CASE(4096, 16, 128, kDirectHinted, 1, "direct hinted 1x128"),
                     ROWS_CASE(4096, 16, 128, kRowMajor, 1, "rowmajor 1x128"), ROWS_CASE(4096, 16, 128, kStaged, 4, "staged 4x128"),
                     ROWS_CASE(4096, 16, 128, kStagedHinted, 4, "staged hinted 4x128")});
  }
  return 0;
}
