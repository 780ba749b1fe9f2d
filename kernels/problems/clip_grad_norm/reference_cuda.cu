// clip_grad_norm cuda reference, as PyTorch's clip_grad_norm_ does it
// (foreach norms in f32, one all-reduce, foreach scale): per-block f32 sums of
// squares over the three gradients, one block adds the partials in a fixed
// order (deterministic), ncclAllReduce of one f32, then one kernel scales the
// three gradients by coef (read on device: no host round trip) and writes
// total_norm (the partials' sum and the all-reduce: common/clip_norm.cuh,
// shared with clip_grad_norm_ep). Written with the candidate ABI: it is also compiled as a
// candidate (ref_cuda_clip_grad_norm.so).
#include "pkforge/candidate.h"
#include "../common/clip_norm.cuh"

typedef struct {
  const void* g[3];
  void* c[3];
} pkf_clip_ptrs;

extern "C" int pkf_setup(pkf_context* ctx) { return pkf_clip_setup(ctx); }
extern "C" void pkf_teardown(pkf_context* ctx) { pkf_clip_teardown(ctx); }

__global__ void pkf_clip_sumsq(pkf_clip_ptrs p, pkf_dtype dt, int64_t n, float* partial) {
  float acc = 0.0f;
  for (int t = 0; t < 3; ++t)
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
      const float v = pkf_dload(p.g[t], dt, i);
      acc += v * v;
    }
  const float s = pkf_cu_block_sum(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

__global__ void pkf_clip_scale(pkf_clip_ptrs p, void* norm_out, pkf_dtype dt, int64_t n, const float* ss) {
  const float total = sqrtf(*ss);
  const float coef = total > 1.0f ? 1.0f / total : 1.0f;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    for (int t = 0; t < 3; ++t) pkf_dstore(p.c[t], dt, i, pkf_dload(p.g[t], dt, i) * coef);
  if (blockIdx.x == 0 && threadIdx.x == 0) pkf_dstore(norm_out, dt, 0, total);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  pkf_clip_state* st = (pkf_clip_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const pkf_dtype dt = out[0].dtype;
  const int64_t n = pkf_cu_numel(&in[0]);
  pkf_clip_ptrs p;
  for (int t = 0; t < 3; ++t) {
    p.g[t] = in[t].data;
    p.c[t] = out[t].data;
  }
  const int blocks = pkf_clip_blocks(n);
  pkf_clip_sumsq<<<blocks, 256, 0, s>>>(p, dt, n, st->partial);
  float* ss = NULL;
  const int rc = pkf_clip_reduce(ctx, st, blocks, /*all_reduce=*/1, s, &ss);
  if (rc != 0) return rc;
  pkf_clip_scale<<<pkf_cu_blocks(n), 256, 0, s>>>(p, out[3].data, dt, n, ss);
  PKF_CU(cudaGetLastError());
  return 0;
}
