// Self-contained candidate sources shared by the executor's tests and its
// benchmark. They include nothing of the source tree but the candidate ABI
// header, so the executor compiles them exactly as it compiles an LLM's file
// (same include path, same flags), and a benchmark measures the real path.
#pragma once

namespace pkforge::executor::test_candidates {

// Host allreduce (f32): publish x in the symmetric scratch, barrier, sum
// every rank's copy. The /*PRE*/ and /*POST*/ markers let tests derive
// variants (hangs, crashes, wrong answers) by text replacement.
constexpr const char* kAllreduce = R"(#include "pkforge/candidate.h"
#include <string.h>
#include <unistd.h>
#include <stdio.h>
static long long numel(const pkf_tensor* t) { long long n = 1; for (int i = 0; i < t->ndim; ++i) n *= t->shape[i]; return n; }
extern "C" int pkf_setup(pkf_context*) { return 0; }
extern "C" void pkf_teardown(pkf_context*) {}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t, void*) {
  /*PRE*/
  const long long n = numel(&in[0]);
  memcpy(ctx->peer_scratch[ctx->rank], in[0].data, n * sizeof(float));
  if (ctx->barrier(ctx)) return 1;
  float* y = (float*)out[0].data;
  for (long long i = 0; i < n; ++i) {
    float s = 0;
    for (int r = 0; r < ctx->world_size; ++r) s += ((const float*)ctx->peer_scratch[r])[i];
    y[i] = s /*POST*/;
  }
  return ctx->barrier(ctx);
}
)";

// CUDA allreduce (f32, world size <= 8): the copy engine publishes x in this
// rank's symmetric scratch, the host barrier orders every publish before any
// read, one kernel sums all ranks' scratch through the peer mappings (the
// pointers travel by value, so no device-side table is needed), and a final
// barrier keeps a fast rank from overwriting its scratch while a slow peer
// still reads it. Deliberately plain: it stands for a typical candidate's
// compile and run cost, not for a fast allreduce.
constexpr const char* kCudaAllreduce = R"(#include <cuda_runtime.h>
#include <stdint.h>
#include "pkforge/candidate.h"
struct Peers { const float* p[8]; };
__global__ void SumPeers(Peers peers, int world, float* y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float s = 0.0f;
    for (int r = 0; r < world; ++r) s += peers.p[r][i];
    y[i] = s;
  }
}
static int64_t numel(const pkf_tensor* t) { int64_t n = 1; for (int i = 0; i < t->ndim; ++i) n *= t->shape[i]; return n; }
extern "C" int pkf_setup(pkf_context*) { return 0; }
extern "C" void pkf_teardown(pkf_context*) {}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t, void* stream) {
  cudaStream_t s = (cudaStream_t)stream;
  const int64_t n = numel(&in[0]);
  const size_t bytes = (size_t)n * sizeof(float);
  if (in[0].dtype != PKF_F32 || ctx->world_size > 8 || bytes > ctx->scratch_bytes) return 1;
  if (cudaMemcpyAsync(ctx->peer_scratch[ctx->rank], in[0].data, bytes, cudaMemcpyDeviceToDevice, s) != cudaSuccess) return 2;
  if (cudaStreamSynchronize(s) != cudaSuccess) return 3;
  if (ctx->barrier(ctx)) return 4;
  Peers peers = {};
  for (int r = 0; r < ctx->world_size; ++r) peers.p[r] = (const float*)ctx->peer_scratch[r];
  int64_t blocks = (n + 255) / 256;
  if (blocks > 65535) blocks = 65535;
  if (blocks < 1) blocks = 1;
  SumPeers<<<(int)blocks, 256, 0, s>>>(peers, ctx->world_size, (float*)out[0].data, n);
  if (cudaGetLastError() != cudaSuccess) return 5;
  if (cudaStreamSynchronize(s) != cudaSuccess) return 6;
  return ctx->barrier(ctx);
}
)";

}  // namespace pkforge::executor::test_candidates
