// perf/probe90 (session 40): can bf16 LayerNorm → per-token e5m2 at 2880 columns — the sweep's slowest row,
// 0.79 × copy untuned and 0.80 at `fusegen tune`'s best, bound by ~18 SASS instructions a value (NOTES.md,
// "Where the remaining time goes") — reach 0.90 when persistent blocks widen the weight and bias once and keep
// them in registers for every row they take, the next row's x loaded while the current one is reduced?
//
//   row         one row a block of 128 threads, three 16-byte vectors a thread (360 vectors, the last tile
//               masked): fusegen's planner program, by hand
//   persistent  as many blocks of 128 threads as fit an SM, each taking rows b, b + grid, …; weight and bias
//               widened to fp32 once a block, the next row's x in registers before this row's reductions
//   persistent_nopf  the same without the prefetch (what the widening alone is worth)
//
// Every variant's Q and scales are compared bit for bit with `row`'s (the same thread layout and reduction
// order), whose scales are checked against the host on three rows. CUDA-graph medians of 20 calls against a
// float4 copy kernel of 1 GiB.
//
//     nvcc -arch=sm_90a -O3 -std=c++17 -o /tmp/ln_e5m2 perf/probe90/ln_e5m2.cu && /tmp/ln_e5m2
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include "../proto/graph_timing.cuh"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

constexpr int kHidden = 2880, kThreads = 128, kVectors = kHidden / 8, kTiles = (kVectors + kThreads - 1) / kThreads;
constexpr float kEps = 1e-5f, kFp8Max = 57344.0f, kAmaxFloor = 1e-10f;

// A bf16 pair's two floats: the low half shifted up, the high half masked.
__device__ __forceinline__ void widen(uint32_t word, float& low, float& high) {
  low = __uint_as_float(word << 16);
  high = __uint_as_float(word & 0xffff0000u);
}

__device__ __forceinline__ void widen8(const uint4& v, float (&out)[8]) {
  widen(v.x, out[0], out[1]);
  widen(v.y, out[2], out[3]);
  widen(v.z, out[4], out[5]);
  widen(v.w, out[6], out[7]);
}

template <typename Op>
__device__ __forceinline__ float block_reduce(float value, float* exchange, Op op) {
#pragma unroll
  for (int o = 16; o; o >>= 1) value = op(value, __shfl_xor_sync(0xffffffffu, value, o));
  __syncthreads();  // the previous reduction's readers are done with `exchange`
  if ((threadIdx.x & 31) == 0) exchange[threadIdx.x >> 5] = value;
  __syncthreads();
  float total = exchange[0];
#pragma unroll
  for (int w = 1; w < kThreads / 32; ++w) total = op(total, exchange[w]);
  return total;
}

struct Add {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

__device__ __forceinline__ bool live(int tile) { return tile * kThreads + (int)threadIdx.x < kVectors; }

__device__ __forceinline__ void load_row(const __nv_bfloat16* row, uint4 (&raw)[kTiles]) {
#pragma unroll
  for (int t = 0; t < kTiles; ++t)
    raw[t] = live(t) ? reinterpret_cast<const uint4*>(row)[t * kThreads + threadIdx.x] : make_uint4(0, 0, 0, 0);
}

// One row from its raw x, with weight and bias already widened: LayerNorm, per-token amax, e5m2.
__device__ __forceinline__ void norm_quant_store(const uint4 (&raw)[kTiles], const float (&w)[kTiles][8], const float (&b)[kTiles][8],
                                                 __nv_fp8_storage_t* qrow, float* scale_out, float* exchange) {
  float v[kTiles][8];
  float sum = 0.f;
#pragma unroll
  for (int t = 0; t < kTiles; ++t) {
    widen8(raw[t], v[t]);
#pragma unroll
    for (int e = 0; e < 8; ++e) sum += v[t][e];
  }
  const float mean = block_reduce(sum, exchange, Add()) * (1.0f / kHidden);
  float centered = 0.f;
#pragma unroll
  for (int t = 0; t < kTiles; ++t)
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      v[t][e] = live(t) ? v[t][e] - mean : 0.f;
      centered += v[t][e] * v[t][e];
    }
  const float rstd = rsqrtf(block_reduce(centered, exchange, Add()) * (1.0f / kHidden) + kEps);
  float amax = 0.f;
#pragma unroll
  for (int t = 0; t < kTiles; ++t)
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      v[t][e] = fmaf(v[t][e] * rstd, w[t][e], b[t][e]);
      amax = fmaxf(amax, fabsf(v[t][e]));
    }
  const float scale = fmaxf(block_reduce(amax, exchange, Max()), kAmaxFloor) / kFp8Max;
  const float inverse = __frcp_rn(scale);
#pragma unroll
  for (int t = 0; t < kTiles; ++t) {
    if (!live(t)) continue;
    uint2 packed;
    uint16_t* pairs = reinterpret_cast<uint16_t*>(&packed);
#pragma unroll
    for (int e = 0; e < 8; e += 2)
      pairs[e / 2] = __nv_cvt_float2_to_fp8x2(make_float2(v[t][e] * inverse, v[t][e + 1] * inverse), __NV_SATFINITE, __NV_E5M2);
    reinterpret_cast<uint2*>(qrow)[t * kThreads + threadIdx.x] = packed;
  }
  if (threadIdx.x == 0) *scale_out = scale;
}

__device__ __forceinline__ void load_side(const __nv_bfloat16* weight, const __nv_bfloat16* bias, float (&w)[kTiles][8], float (&b)[kTiles][8]) {
  uint4 raw_w[kTiles], raw_b[kTiles];
  load_row(weight, raw_w);
  load_row(bias, raw_b);
#pragma unroll
  for (int t = 0; t < kTiles; ++t) {
    widen8(raw_w[t], w[t]);
    widen8(raw_b[t], b[t]);
  }
}

__global__ void __launch_bounds__(kThreads) row_kernel(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ weight,
                                                       const __nv_bfloat16* __restrict__ bias, __nv_fp8_storage_t* __restrict__ q,
                                                       float* __restrict__ scales, int m) {
  __shared__ float exchange[kThreads / 32];
  const int row = blockIdx.x;
  uint4 raw[kTiles];
  load_row(x + (long)row * kHidden, raw);
  float w[kTiles][8], b[kTiles][8];
  load_side(weight, bias, w, b);
  norm_quant_store(raw, w, b, q + (long)row * kHidden, scales + row, exchange);
}

template <bool PREFETCH>
__global__ void __launch_bounds__(kThreads) persistent_kernel(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ weight,
                                                              const __nv_bfloat16* __restrict__ bias, __nv_fp8_storage_t* __restrict__ q,
                                                              float* __restrict__ scales, int m) {
  __shared__ float exchange[kThreads / 32];
  float w[kTiles][8], b[kTiles][8];
  load_side(weight, bias, w, b);
  uint4 raw[kTiles], next[kTiles];
  int row = blockIdx.x;
  if (PREFETCH && row < m) load_row(x + (long)row * kHidden, next);
  for (; row < m; row += gridDim.x) {
    if (PREFETCH) {
#pragma unroll
      for (int t = 0; t < kTiles; ++t) raw[t] = next[t];
      if (row + (int)gridDim.x < m) load_row(x + (long)(row + gridDim.x) * kHidden, next);
    } else {
      load_row(x + (long)row * kHidden, raw);
    }
    norm_quant_store(raw, w, b, q + (long)row * kHidden, scales + row, exchange);
  }
}

static float bf16_to_float(uint16_t bits) {
  const uint32_t word = (uint32_t)bits << 16;
  float f;
  memcpy(&f, &word, 4);
  return f;
}

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const double copy_tb = copy_ceiling_tb(sms, stream);
  for (int m : {23301, 65536}) {
    __nv_bfloat16 *x, *weight, *bias;
    __nv_fp8_storage_t* q;
    float* scales;
    CHECK(cudaMalloc(&x, (size_t)m * kHidden * 2));
    CHECK(cudaMalloc(&weight, kHidden * 2));
    CHECK(cudaMalloc(&bias, kHidden * 2));
    CHECK(cudaMalloc(&q, (size_t)m * kHidden));
    CHECK(cudaMalloc(&scales, m * sizeof(float)));
    std::vector<uint16_t> hx((size_t)m * kHidden), hw(kHidden), hb(kHidden);
    uint32_t state = 2880u + m;
    auto next_bf16 = [&](float lo, float hi) {
      state = state * 1664525u + 1013904223u;
      const float f = lo + (hi - lo) * ((state >> 8) * (1.0f / 16777216.0f));
      uint32_t word;
      memcpy(&word, &f, 4);
      return (uint16_t)(word >> 16);
    };
    for (auto& v : hx) v = next_bf16(-4.f, 6.f);
    for (auto& v : hw) v = next_bf16(0.5f, 1.5f);
    for (auto& v : hb) v = next_bf16(-0.5f, 0.5f);
    CHECK(cudaMemcpy(x, hx.data(), hx.size() * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(weight, hw.data(), kHidden * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(bias, hb.data(), kHidden * 2, cudaMemcpyHostToDevice));
    const double bytes = (double)m * kHidden * 2 + (double)m * kHidden + (double)m * 4 + 2.0 * kHidden * 2;
    struct Variant {
      const char* name;
      void (*launch)(const __nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, __nv_fp8_storage_t*, float*, int, int, cudaStream_t);
    };
    auto persistent_grid = [&](auto kernel) {
      int resident = 0;
      CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, kThreads, 0));
      return std::min(m, sms * resident);
    };
    const int grid_pf = persistent_grid(persistent_kernel<true>), grid_nopf = persistent_grid(persistent_kernel<false>);
    printf("persistent grids: %d (prefetch), %d blocks\n", grid_pf, grid_nopf);
    static int s_grid_pf, s_grid_nopf;
    s_grid_pf = grid_pf;
    s_grid_nopf = grid_nopf;
    const Variant variants[] = {
        {"row", [](const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* b, __nv_fp8_storage_t* q, float* s, int m, int,
                   cudaStream_t st) { row_kernel<<<m, kThreads, 0, st>>>(x, w, b, q, s, m); }},
        {"persistent", [](const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* b, __nv_fp8_storage_t* q, float* s, int m, int,
                          cudaStream_t st) { persistent_kernel<true><<<s_grid_pf, kThreads, 0, st>>>(x, w, b, q, s, m); }},
        {"persistent_nopf", [](const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* b, __nv_fp8_storage_t* q, float* s, int m,
                               int, cudaStream_t st) { persistent_kernel<false><<<s_grid_nopf, kThreads, 0, st>>>(x, w, b, q, s, m); }},
    };
    std::vector<uint8_t> want_q, got_q((size_t)m * kHidden);
    std::vector<float> want_s, got_s(m);
    for (const Variant& v : variants) {
      // Poisoned on the kernel's own stream: a cudaMemset on the legacy stream is not ordered before it.
      CHECK(cudaMemsetAsync(q, 0xff, (size_t)m * kHidden, stream));
      CHECK(cudaMemsetAsync(scales, 0xff, m * sizeof(float), stream));
      v.launch(x, weight, bias, q, scales, m, 0, stream);
      CHECK(cudaGetLastError());
      CHECK(cudaStreamSynchronize(stream));
      CHECK(cudaMemcpy(got_q.data(), q, got_q.size(), cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(got_s.data(), scales, m * sizeof(float), cudaMemcpyDeviceToHost));
      bool same = true;
      if (&v == &variants[0]) {
        want_q = got_q;
        want_s = got_s;
        for (int t : {0, 1, m - 1}) {  // the arithmetic itself, loosely (rsqrtf is not the host's)
          double mean = 0, var = 0, amax = 0;
          for (int j = 0; j < kHidden; ++j) mean += bf16_to_float(hx[(size_t)t * kHidden + j]);
          mean /= kHidden;
          for (int j = 0; j < kHidden; ++j) var += std::pow(bf16_to_float(hx[(size_t)t * kHidden + j]) - mean, 2);
          const double rstd = 1.0 / std::sqrt(var / kHidden + kEps);
          for (int j = 0; j < kHidden; ++j)
            amax = std::max(amax, std::fabs((bf16_to_float(hx[(size_t)t * kHidden + j]) - mean) * rstd * bf16_to_float(hw[j]) + bf16_to_float(hb[j])));
          const double expected = std::max(amax, (double)kAmaxFloor) / kFp8Max;
          if (!(std::fabs(got_s[t] - expected) <= 1e-4 * expected)) {  // a NaN fails too
            printf("row %d: scale %g, expected %g\n", t, got_s[t], expected);
            return 1;
          }
        }
      } else {
        same = memcmp(want_q.data(), got_q.data(), got_q.size()) == 0 && memcmp(want_s.data(), got_s.data(), m * sizeof(float)) == 0;
        if (!same) {  // how far: rows whose scale or values differ, the largest scale ratio, the first such row
          int rows = 0, first = -1;
          double worst = 0;
          for (int t = 0; t < m; ++t) {
            const bool row_same = want_s[t] == got_s[t] && memcmp(&want_q[(size_t)t * kHidden], &got_q[(size_t)t * kHidden], kHidden) == 0;
            if (!row_same) {
              ++rows;
              if (first < 0) first = t;
              worst = std::max(worst, std::fabs((double)got_s[t] / want_s[t] - 1.0));
            }
          }
          int bytes = 0;
          for (int j = 0; j < kHidden && first >= 0; ++j) bytes += want_q[(size_t)first * kHidden + j] != got_q[(size_t)first * kHidden + j];
          printf("  %s: %d of %d rows differ, largest scale ratio - 1 %.3g; row %d: scale %.9g against %.9g, %d of %d values\n", v.name, rows,
                 m, worst, first, first >= 0 ? got_s[first] : 0.f, first >= 0 ? want_s[first] : 0.f, bytes, kHidden);
        }
      }
      const float us = graph_median_us([&] { v.launch(x, weight, bias, q, scales, m, 0, stream); }, 20, stream);
      printf("bf16 LayerNorm -> e5m2 per token %6d x %d  %-16s %8.1f us  %.3f x copy  %s\n", m, kHidden, v.name, us,
             bytes / (us * 1e-6) / 1e12 / copy_tb, same ? "matches row" : "DIFFERS from row");
    }
    CHECK(cudaFree(x));
    CHECK(cudaFree(weight));
    CHECK(cudaFree(bias));
    CHECK(cudaFree(q));
    CHECK(cudaFree(scales));
  }
  return 0;
}
