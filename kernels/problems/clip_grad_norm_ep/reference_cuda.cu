// clip_grad_norm_ep cuda reference, as PyTorch's FSDP2 EP-aware clipping does
// it fused (foreach norms in f32, the expert scale applied in the dtype, one
// all-reduce: PKB's EP-FSDP + EP stages tile the world, so one world
// all-reduce of the summed terms is the same): per-block f32 sums of squares of
// g and of e' = dtype(e / ep_size), one block adds the partials in a fixed
// order (deterministic), ncclAllReduce of one f32, then one kernel writes both
// clipped gradients and total_norm (coef read on device: no host round trip).
// Written with the candidate ABI: it is also compiled as a candidate
// (ref_cuda_clip_grad_norm_ep.so).
#include "pkforge/candidate.h"
#include "../common/cuda_util.cuh"

#define PKF_CGE_BLOCKS 1024

typedef struct {
  float* partial;  // [PKF_CGE_BLOCKS + 1]: partials, then the sum of squares
} pkf_cge_state;

extern "C" int pkf_setup(pkf_context* ctx) {
  pkf_cge_state* st = (pkf_cge_state*)calloc(1, sizeof(pkf_cge_state));
  if (st == NULL) return 1;
  ctx->user_state = st;
  PKF_CU(cudaMalloc(&st->partial, (PKF_CGE_BLOCKS + 1) * sizeof(float)));
  return 0;
}
extern "C" void pkf_teardown(pkf_context* ctx) {
  pkf_cge_state* st = (pkf_cge_state*)ctx->user_state;
  if (st == NULL) return;
  if (st->partial) cudaFree(st->partial);
  free(st);
}

__device__ __forceinline__ float pkf_cge_round(float v, pkf_dtype dt) {
  return dt == PKF_F32 ? v : dt == PKF_F16 ? __half2float(__float2half_rn(v)) : __bfloat162float(__float2bfloat16_rn(v));
}

__device__ __forceinline__ float pkf_cge_block_sum(float v) {
  __shared__ float part[256];
  part[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  return part[0];
}

__global__ void pkf_cge_sumsq(const void* g, const void* e, float scale, pkf_dtype dt, int64_t n, float* partial) {
  float acc = 0.0f;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const float a = pkf_dload(g, dt, i), b = pkf_cge_round(pkf_dload(e, dt, i) * scale, dt);
    acc += a * a + b * b;
  }
  const float s = pkf_cge_block_sum(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

__global__ void pkf_cge_total(float* partial, int blocks) {
  float acc = 0.0f;
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) acc += partial[b];
  const float s = pkf_cge_block_sum(acc);
  if (threadIdx.x == 0) partial[PKF_CGE_BLOCKS] = s;
}

__global__ void pkf_cge_scale(const void* g, const void* e, void* cg, void* ce, void* norm_out, float scale,
                              pkf_dtype dt, int64_t n, const float* ss) {
  const float total = sqrtf(*ss);
  const float coef = total > 1.0f ? 1.0f / total : 1.0f;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    pkf_dstore(cg, dt, i, pkf_dload(g, dt, i) * coef);
    pkf_dstore(ce, dt, i, pkf_cge_round(pkf_dload(e, dt, i) * scale, dt) * coef);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) pkf_dstore(norm_out, dt, 0, total);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_in; (void)n_out;
  pkf_cge_state* st = (pkf_cge_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const pkf_dtype dt = out[0].dtype;
  const int64_t n = pkf_cu_numel(&in[0]);
  const int ep_size = ctx->world_size / 2 > 1 ? ctx->world_size / 2 : 1;
  const float scale = 1.0f / (float)ep_size;
  int blocks = pkf_cu_blocks(n);
  if (blocks > PKF_CGE_BLOCKS) blocks = PKF_CGE_BLOCKS;
  pkf_cge_sumsq<<<blocks, 256, 0, s>>>(in[0].data, in[1].data, scale, dt, n, st->partial);
  pkf_cge_total<<<1, 256, 0, s>>>(st->partial, blocks);
  PKF_CU(cudaGetLastError());
  float* ss = st->partial + PKF_CGE_BLOCKS;
  if (ctx->world_size > 1)
    PKF_NCCL(ncclAllReduce(ss, ss, 1, ncclFloat32, ncclSum, (ncclComm_t)ctx->nccl, s));
  pkf_cge_scale<<<pkf_cu_blocks(n), 256, 0, s>>>(in[0].data, in[1].data, out[0].data, out[1].data, out[2].data, scale,
                                                 dt, n, ss);
  PKF_CU(cudaGetLastError());
  return 0;
}
