// perf/probe87 (built in session 39, for the next device session): can column-major FP8 scales in small
// groups on wide rows reach the speed of row-major ones, and which store pattern does it take?
//
// The draws' slowest family (NOTES.md, "Where untuned draws fall short"): RMSNorm → FP8 in groups of 8–16
// with column-major scales on rows of 5120+ columns runs 0.5–0.7 × copy, where the same chain with row-major
// scales runs ~0.9. A group's scales of 8 consecutive rows share a 32-byte sector; a block of one row (or of
// the 2–4 rows 512 threads hold) writes 4–16 bytes of it. This file times one hand-written RMSNorm → FP8
// kernel under five store patterns, on the same arithmetic:
//   direct        one row a block, each scale stored alone (4 bytes of a sector)
//   rowmajor      one row a block, scales row-major (the floor the layout costs against)
//   staged4       four rows a block on 4 × THREADS threads, scales staged in shared memory, 16-byte runs
//                 (fusegen's schedule.sector_rows)
//   loop8         a block takes the 8 consecutive rows of one sector one after another, the next row's x in
//                 flight through a two-slot cp.async ring, each row's scales staged and the eight rows'
//                 stored as whole 32-byte sectors after the last (the design NOTES.md proposes)
//   loop8direct   the same loop, each scale stored alone (what the consecutive order alone buys)
//   stream8       persistent blocks (as many as fit an SM), each taking a chunk of whole sectors' rows in
//                 the same way (fewer blocks to start, coarser balance: 16384 rows are 2048 sectors)
// against a 1 GiB device copy, CUDA-graph medians. Every pattern's Q and scales are compared bit for bit
// with `direct`'s before it is timed.
//
//     nvcc -arch=sm_90a -O3 -std=c++17 -o /tmp/column_scales perf/probe87/column_scales.cu && /tmp/column_scales
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <vector>

#define CHECK(x)                                                                              \
  do {                                                                                        \
    cudaError_t e = (x);                                                                      \
    if (e != cudaSuccess) {                                                                   \
      printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e));                        \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)

constexpr float kFp8Max = 448.0f;
constexpr float kAmaxFloor = 1e-10f;
constexpr float kEps = 1e-6f;

enum Pattern { kDirect, kRowMajor, kStaged4, kLoop8, kLoop8Direct, kStream8 };
const char* kPatternNames[] = {"direct", "rowmajor", "staged4", "loop8", "loop8direct", "stream8"};

// A row of H fp32 values on THREADS threads: thread t holds groups t, t + THREADS, … (G contiguous values
// each, two 16-byte vectors for G = 8), so a group's amax needs no shuffle.
template <int H, int G, int THREADS>
struct Row {
  static constexpr int kGroups = H / G;
  static constexpr int kPerThread = kGroups / THREADS;
  static_assert(kGroups % THREADS == 0, "whole groups a thread");
  static_assert(G % 4 == 0, "float4 vectors");
  float v[kPerThread][G];

  __device__ void load(const float* row, int tid) {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i)
#pragma unroll
      for (int e = 0; e < G; e += 4) *reinterpret_cast<float4*>(&v[i][e]) = *reinterpret_cast<const float4*>(row + (i * THREADS + tid) * G + e);
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

  __device__ static void store_q(__nv_fp8_storage_t* qrow, int tid, const __nv_fp8_storage_t (&q)[kPerThread][G]) {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i)
#pragma unroll
      for (int e = 0; e < G; e += 8) *reinterpret_cast<uint2*>(qrow + (i * THREADS + tid) * G + e) = *reinterpret_cast<const uint2*>(&q[i][e]);
  }
};

// One row a block (`rows` = 1) or `rows` rows a block of rows × THREADS threads; scales direct, row-major,
// or staged in shared memory and stored by consecutive threads as runs of `rows`.
template <int H, int G, int THREADS, Pattern P, int ROWS>
__global__ void __launch_bounds__(THREADS* ROWS) rows_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                                                            __nv_fp8_storage_t* __restrict__ q, float* __restrict__ scales, int m, int padded_m) {
  using R = Row<H, G, THREADS>;
  __shared__ float exchange[ROWS][THREADS / 32];
  __shared__ float staged[P == kStaged4 ? R::kGroups : 1][ROWS];
  const int sub = threadIdx.x / THREADS, tid = threadIdx.x % THREADS;
  const int row = blockIdx.x * ROWS + sub;
  R r;
  alignas(16) __nv_fp8_storage_t qv[R::kPerThread][G];
  float sv[R::kPerThread];
  if (row < m) r.load(x + (long)row * H, tid);
  r.norm_quant(weight, tid, exchange[sub], qv, sv);
  if (row < m) R::store_q(q + (long)row * H, tid, qv);
#pragma unroll
  for (int i = 0; i < R::kPerThread; ++i) {
    const int g = i * THREADS + tid;
    if (P == kDirect && row < m) scales[(long)g * padded_m + row] = sv[i];
    if (P == kRowMajor && row < m) scales[(long)row * R::kGroups + g] = sv[i];
    if (P == kStaged4) staged[g][sub] = sv[i];
  }
  if (P == kStaged4) {
    __syncthreads();
    for (int k = threadIdx.x; k < R::kGroups * ROWS; k += THREADS * ROWS) {
      const int g = k / ROWS, i = k % ROWS, token = blockIdx.x * ROWS + i;
      if (token < m) scales[(long)g * padded_m + token] = staged[g][i];
    }
  }
}

__device__ inline void cp_async16(void* shared, const void* global) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(address), "l"(global));
}
__device__ inline void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int N>
__device__ inline void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

// A block takes rows [begin, end): `rows_per_block` consecutive rows, whole sectors' (8 fp32 scales).
// Row r + 1's x is copied into the other ring slot while row r is reduced; row r's scales go to column
// r % 8 of `staged`, and after every eighth row (or the chunk's last) the block stores each group's rows
// as one run (staged), or each scale alone as it is found (direct).
template <int H, int G, int THREADS, bool STAGED>
__global__ void __launch_bounds__(THREADS) stream_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                                                         __nv_fp8_storage_t* __restrict__ q, float* __restrict__ scales, int m, int padded_m,
                                                         int rows_per_block) {
  using R = Row<H, G, THREADS>;
  constexpr int kSector = 8;
  extern __shared__ float4 dynamic[];
  float* ring = reinterpret_cast<float*>(dynamic);  // 2 × H
  float* staged = ring + 2 * H;                      // groups × kSector
  __shared__ float exchange[THREADS / 32];
  const int tid = threadIdx.x;
  const int begin = blockIdx.x * rows_per_block, end = min(m, begin + rows_per_block);
  if (begin >= end) return;
  auto fetch = [&](int token, int slot) {
    if (token < end)
      for (int k = tid; k < H / 4; k += THREADS) cp_async16(ring + slot * H + 4 * k, x + (long)token * H + 4 * k);
    cp_async_commit();
  };
  fetch(begin, 0);
  for (int token = begin; token < end; ++token) {
    const int slot = (token - begin) & 1;
    fetch(token + 1, slot ^ 1);
    cp_async_wait<1>();
    __syncthreads();
    R r;
    r.load(ring + slot * H, tid);
    alignas(16) __nv_fp8_storage_t qv[R::kPerThread][G];
    float sv[R::kPerThread];
    r.norm_quant(weight, tid, exchange, qv, sv);  // its barrier also frees this slot for the fetch after next
    R::store_q(q + (long)token * H, tid, qv);
    const int in_sector = (token - begin) % kSector;
#pragma unroll
    for (int i = 0; i < R::kPerThread; ++i) {
      const int g = i * THREADS + tid;
      if (STAGED) staged[g * kSector + in_sector] = sv[i];
      else scales[(long)g * padded_m + token] = sv[i];
    }
    if (STAGED && (in_sector == kSector - 1 || token == end - 1)) {
      __syncthreads();
      const int first = token - in_sector;
      for (int k = tid; k < R::kGroups * kSector; k += THREADS) {
        const int g = k / kSector, i = k % kSector;
        if (first + i <= token) scales[(long)g * padded_m + first + i] = staged[g * kSector + i];
      }
    }
    __syncthreads();  // the exchange and the staged sector are written again by the next row
  }
}

struct Buffers {
  float *x, *weight, *scales;
  __nv_fp8_storage_t* q;
};

template <int H, int G, int THREADS>
void launch(Pattern p, const Buffers& b, int m, int padded_m, int sms, cudaStream_t stream) {
  using R = Row<H, G, THREADS>;
  switch (p) {
    case kDirect:
      rows_kernel<H, G, THREADS, kDirect, 1><<<m, THREADS, 0, stream>>>(b.x, b.weight, b.q, b.scales, m, padded_m);
      break;
    case kRowMajor:
      rows_kernel<H, G, THREADS, kRowMajor, 1><<<m, THREADS, 0, stream>>>(b.x, b.weight, b.q, b.scales, m, padded_m);
      break;
    case kStaged4:
      rows_kernel<H, G, THREADS, kStaged4, 4><<<(m + 3) / 4, 4 * THREADS, 0, stream>>>(b.x, b.weight, b.q, b.scales, m, padded_m);
      break;
    case kLoop8:
    case kLoop8Direct:
    case kStream8: {
      const size_t shared = (2 * H + R::kGroups * 8) * sizeof(float);
      auto kernel = p == kLoop8Direct ? stream_kernel<H, G, THREADS, false> : stream_kernel<H, G, THREADS, true>;
      CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
      const int sectors = (m + 7) / 8;
      int grid = sectors, rows_per_block = 8;
      if (p == kStream8) {
        int resident = 0;
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, THREADS, shared));
        rows_per_block = 8 * ((sectors + sms * std::max(resident, 1) - 1) / (sms * std::max(resident, 1)));
        grid = (m + rows_per_block - 1) / rows_per_block;
      }
      kernel<<<grid, THREADS, shared, stream>>>(b.x, b.weight, b.q, b.scales, m, padded_m, rows_per_block);
      break;
    }
  }
  CHECK(cudaGetLastError());
}

template <typename F>
float graph_median_us(F body, int calls, cudaStream_t stream) {
  body();
  CHECK(cudaStreamSynchronize(stream));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));  // launch() sets attributes and asks occupancy
  for (int i = 0; i < calls; ++i) body();
  CHECK(cudaStreamEndCapture(stream, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  std::vector<float> us;
  for (int rep = 0; rep < 12; ++rep) {
    CHECK(cudaEventRecord(start, stream));
    CHECK(cudaGraphLaunch(exec, stream));
    CHECK(cudaEventRecord(stop, stream));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (rep >= 2) us.push_back(ms * 1000 / calls);
  }
  std::sort(us.begin(), us.end());
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  return us[us.size() / 2];
}

template <int H, int G, int THREADS>
void shape(int m, int sms, double copy_tb, cudaStream_t stream) {
  using R = Row<H, G, THREADS>;
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
  for (int p = kDirect; p <= kStream8; ++p) {
    CHECK(cudaMemset(b.q, 0xff, (size_t)m * H));
    CHECK(cudaMemset(b.scales, 0xff, (size_t)R::kGroups * padded_m * sizeof(float)));
    launch<H, G, THREADS>((Pattern)p, b, m, padded_m, sms, stream);
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaMemcpy(got_q.data(), b.q, got_q.size(), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(got_s.data(), b.scales, got_s.size() * sizeof(float), cudaMemcpyDeviceToHost));
    if (p == kRowMajor) {  // compared in the column-major order
      std::vector<float> column(got_s.size());
      for (int t = 0; t < m; ++t)
        for (int g = 0; g < R::kGroups; ++g) column[(size_t)g * padded_m + t] = got_s[(size_t)t * R::kGroups + g];
      for (int t = m; t < padded_m; ++t)
        for (int g = 0; g < R::kGroups; ++g) column[(size_t)g * padded_m + t] = want_s[(size_t)g * padded_m + t];
      got_s = column;
    }
    bool same = true;
    if (p == kDirect) {
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
          if (fabs(want_s[(size_t)g * padded_m + t] - expected) > 1e-4 * expected) {
            printf("row %d group %d: scale %g, expected %g\n", t, g, want_s[(size_t)g * padded_m + t], expected);
            exit(1);
          }
        }
      }
    } else {
      same = memcmp(want_q.data(), got_q.data(), got_q.size()) == 0;
      for (int g = 0; g < R::kGroups && same; ++g) same = memcmp(&want_s[(size_t)g * padded_m], &got_s[(size_t)g * padded_m], m * sizeof(float)) == 0;
    }
    const float us = graph_median_us([&] { launch<H, G, THREADS>((Pattern)p, b, m, padded_m, sms, stream); }, 20, stream);
    printf("fp32 RMSNorm -> FP8 g%-3d %6d x %5d  %-14s %8.1f us  %.3f x copy  %s\n", G, m, H, kPatternNames[p], us,
           bytes / (us * 1e-6) / 1e12 / copy_tb, same ? "matches direct" : "DIFFERS from direct");
  }
  CHECK(cudaFree(b.x));
  CHECK(cudaFree(b.weight));
  CHECK(cudaFree(b.q));
  CHECK(cudaFree(b.scales));
}

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const size_t copy_bytes = 1ull << 30;
  void *a, *c;
  CHECK(cudaMalloc(&a, copy_bytes));
  CHECK(cudaMalloc(&c, copy_bytes));
  const float copy_us = graph_median_us([&] { CHECK(cudaMemcpyAsync(c, a, copy_bytes, cudaMemcpyDeviceToDevice, stream)); }, 8, stream);
  const double copy_tb = 2.0 * copy_bytes / (copy_us * 1e-6) / 1e12;
  printf("copy 1 GiB: %.1f us, %.3f TB/s; %d SMs\n", copy_us, copy_tb, sms);
  CHECK(cudaFree(a));
  CHECK(cudaFree(c));
  shape<5120, 8, 128>(16384, sms, copy_tb, stream);
  shape<10240, 8, 256>(16384, sms, copy_tb, stream);
  shape<4096, 16, 128>(16384, sms, copy_tb, stream);
  shape<8192, 16, 128>(16384, sms, copy_tb, stream);
  return 0;
}
