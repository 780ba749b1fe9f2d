// clip_grad_norm cuda reference, as PyTorch's clip_grad_norm_ does it
// (foreach norms in f32, one all-reduce, foreach scale): per-block f32 sums of
// squares over the three gradients, one block adds the partials in a fixed
// order (deterministic), ncclAllReduce of one f32, then one kernel scales the
// three gradients by coef (read on device: no host round trip) and writes
// total_norm. Written with the candidate ABI: it is also compiled as a
// candidate (ref_cuda_clip_grad_norm.so).
#include "pkforge/candidate.h"
#include "../common/cuda_util.cuh"

#define PKF_CLIP_BLOCKS 1024

typedef struct {
  float* partial;  // [PKF_CLIP_BLOCKS + 1]: partials, then the sum of squares
} pkf_clip_state;

typedef struct {
  const void* g[3];
  void* c[3];
} pkf_clip_ptrs;

extern "C" int pkf_setup(pkf_context* ctx) {
  pkf_clip_state* st = (pkf_clip_state*)calloc(1, sizeof(pkf_clip_state));
  if (st == NULL) return 1;
  ctx->user_state = st;
  PKF_CU(cudaMalloc(&st->partial, (PKF_CLIP_BLOCKS + 1) * sizeof(float)));
  return 0;
}
extern "C" void pkf_teardown(pkf_context* ctx) {
  pkf_clip_state* st = (pkf_clip_state*)ctx->user_state;
  if (st == NULL) return;
  if (st->partial) cudaFree(st->partial);
  free(st);
}

__device__ __forceinline__ float pkf_block_sum(float v) {
  __shared__ float part[256];
  part[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  return part[0];
}

__global__ void pkf_clip_sumsq(pkf_clip_ptrs p, pkf_dtype dt, int64_t n, float* partial) {
  float acc = 0.0f;
  for (int t = 0; t < 3; ++t)
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
      const float v = pkf_dload(p.g[t], dt, i);
      acc += v * v;
    }
  const float s = pkf_block_sum(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

__global__ void pkf_clip_total(float* partial, int blocks) {
  float acc = 0.0f;
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) acc += partial[b];
  const float s = pkf_block_sum(acc);
  if (threadIdx.x == 0) partial[PKF_CLIP_BLOCKS] = s;
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
  int blocks = pkf_cu_blocks(n);
  if (blocks > PKF_CLIP_BLOCKS) blocks = PKF_CLIP_BLOCKS;
  pkf_clip_sumsq<<<blocks, 256, 0, s>>>(p, dt, n, st->partial);
  pkf_clip_total<<<1, 256, 0, s>>>(st->partial, blocks);
  PKF_CU(cudaGetLastError());
  float* ss = st->partial + PKF_CLIP_BLOCKS;
  PKF_NCCL(ncclAllReduce(ss, ss, 1, ncclFloat32, ncclSum, (ncclComm_t)ctx->nccl, s));
  pkf_clip_scale<<<pkf_cu_blocks(n), 256, 0, s>>>(p, out[3].data, dt, n, ss);
  PKF_CU(cudaGetLastError());
  return 0;
}
