// What the hand-written CUDA probes share (perf/probe87, perf/probe90): a checked CUDA call, a float4 copy
// kernel for the copy ceiling of the same run, and the median of a CUDA graph's replays (the first two
// dropped as warm-up). Include after <cuda_runtime.h>.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                       \
  do {                                                                 \
    cudaError_t e = (x);                                               \
    if (e != cudaSuccess) {                                            \
      printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
      exit(1);                                                         \
    }                                                                  \
  } while (0)

__global__ void copy_kernel(const float4* __restrict__ from, float4* __restrict__ to, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) to[i] = from[i];
}

// Microseconds a call of `body`: `calls` calls captured in one graph (relaxed capture: a body may set kernel
// attributes or ask occupancy), the median of ten timed replays.
template <typename F>
float graph_median_us(F body, int calls, cudaStream_t stream) {
  body();
  CHECK(cudaStreamSynchronize(stream));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
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
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  return us[us.size() / 2];
}

// The copy ceiling of this run: a float4 kernel over 1 GiB, bytes read and written, in TB/s (printed).
inline double copy_ceiling_tb(int sms, cudaStream_t stream) {
  const size_t bytes = 1ull << 30;
  void *a, *c;
  CHECK(cudaMalloc(&a, bytes));
  CHECK(cudaMalloc(&c, bytes));
  CHECK(cudaMemsetAsync(a, 1, bytes, stream));
  const float us = graph_median_us(
      [&] { copy_kernel<<<sms * 16, 256, 0, stream>>>(static_cast<const float4*>(a), static_cast<float4*>(c), bytes / 16); }, 8, stream);
  CHECK(cudaFree(a));
  CHECK(cudaFree(c));
  const double tb = 2.0 * bytes / (us * 1e-6) / 1e12;
  printf("copy 1 GiB (float4 kernel): %.1f us, %.3f TB/s; %d SMs\n", us, tb, sms);
  return tb;
}
