// perf/probe79: how much of a short row's time is the kernel boundary, and does programmatic dependent
// launch (PDL) recover it? Plain copies of the model library's short-row shapes (16384 rows of 1152 and
// 2048 bytes: MLA kv_a, Qwen3-8B k), timed as fusegen bench times (CUDA graph of 64 back-to-back calls over
// input sets past 3x L2, median of 30 replays), with and without PDL, against a 1 GiB copy.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

// Each block copies `chunk` 16-byte vectors starting at blockIdx.x * chunk (grid-stride when persistent).
template <bool kPdl>
__global__ void copy_chunks(const uint4* __restrict__ in, uint4* __restrict__ out, long vectors, int chunk, int persistent) {
  if (kPdl) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;");
  }
  if (persistent) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < vectors; i += (long)gridDim.x * blockDim.x) out[i] = in[i];
    return;
  }
  const long base = (long)blockIdx.x * chunk;
  for (int i = threadIdx.x; i < chunk; i += blockDim.x) {
    if (base + i < vectors) out[base + i] = in[base + i];
  }
}

struct Config { const char* name; int threads; int rows_per_block; int persistent_blocks_per_sm; };

float time_graph(bool pdl, const Config& c, long row_bytes, long rows, std::vector<uint4*>& ins, std::vector<uint4*>& outs, int sms) {
  const long vectors = row_bytes * rows / 16;
  const int chunk = (int)(row_bytes * c.rows_per_block / 16);
  const int grid = c.persistent_blocks_per_sm ? sms * c.persistent_blocks_per_sm : (int)((vectors + chunk - 1) / chunk);
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto launch = [&](int i) {
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(grid);
    config.blockDim = dim3(c.threads);
    config.stream = stream;
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[0].val.programmaticStreamSerializationAllowed = 1;
    config.attrs = attribute;
    config.numAttrs = pdl ? 1 : 0;
    const uint4* in = ins[i % ins.size()];
    uint4* out = outs[i % outs.size()];
    int persistent = c.persistent_blocks_per_sm != 0;
    if (pdl) CHECK(cudaLaunchKernelEx(&config, copy_chunks<true>, in, out, vectors, chunk, persistent));
    else CHECK(cudaLaunchKernelEx(&config, copy_chunks<false>, in, out, vectors, chunk, persistent));
  };
  const int calls = 64;
  for (int i = 0; i < 3; ++i) launch(i);
  CHECK(cudaStreamSynchronize(stream));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < calls; ++i) launch(i);
  CHECK(cudaStreamEndCapture(stream, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphLaunch(exec, stream));
  CHECK(cudaStreamSynchronize(stream));
  std::vector<float> samples;
  cudaEvent_t start, end;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&end));
  for (int r = 0; r < 30; ++r) {
    CHECK(cudaEventRecord(start, stream));
    CHECK(cudaGraphLaunch(exec, stream));
    CHECK(cudaEventRecord(end, stream));
    CHECK(cudaEventSynchronize(end));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, start, end));
    samples.push_back(ms * 1e3f / calls);
  }
  std::sort(samples.begin(), samples.end());
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(stream));
  return samples[samples.size() / 2];
}

int main() {
  int sms;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  // The ceiling: a 1 GiB copy, one 256-thread block per 4 KiB.
  const long big = 1l << 30;
  std::vector<uint4*> big_in(1), big_out(1);
  CHECK(cudaMalloc(&big_in[0], big));
  CHECK(cudaMalloc(&big_out[0], big));
  CHECK(cudaMemset(big_in[0], 1, big));
  Config ceiling_config{"ceiling", 256, 1, 0};
  const float ceiling_us = time_graph(false, ceiling_config, 4096, big / 4096, big_in, big_out, sms);
  const double ceiling = 2.0 * big / (ceiling_us * 1e-6) / 1e12;
  printf("ceiling: 1 GiB copy %.1f us = %.3f TB/s\n", ceiling_us, ceiling);
  const Config configs[] = {
      {"1 row / 32 thr", 32, 1, 0},   {"1 row / 64 thr", 64, 1, 0},   {"2 rows / 64 thr", 64, 2, 0},
      {"4 rows / 128 thr", 128, 4, 0}, {"8 rows / 256 thr", 256, 8, 0}, {"16 rows / 256 thr", 256, 16, 0},
      {"persistent 256 thr x 8/SM", 256, 1, 8}, {"persistent 128 thr x 16/SM", 128, 1, 16},
  };
  for (long row_bytes : {1152l, 2048l, 8192l}) {
    for (long rows : {16384l, 65536l}) {
      const long bytes = row_bytes * rows;
      const int sets = (int)std::max(2l, (3l * 60 * 1000 * 1000) / (2 * bytes) + 1);
      std::vector<uint4*> ins(sets), outs(sets);
      for (int s = 0; s < sets; ++s) {
        CHECK(cudaMalloc(&ins[s], bytes));
        CHECK(cudaMalloc(&outs[s], bytes));
        CHECK(cudaMemset(ins[s], s + 1, bytes));
      }
      for (const Config& c : configs) {
        for (bool pdl : {false, true}) {
          const float us = time_graph(pdl, c, row_bytes, rows, ins, outs, sms);
          const double tbs = 2.0 * bytes / (us * 1e-6) / 1e12;
          printf("row %5ld B x %6ld rows | %-28s | pdl %d | %8.2f us | %.3f TB/s | %.3f x copy\n", row_bytes, rows, c.name, pdl, us, tbs, tbs / ceiling);
        }
      }
      for (int s = 0; s < sets; ++s) { CHECK(cudaFree(ins[s])); CHECK(cudaFree(outs[s])); }
    }
  }
  return 0;
}
