// clip_grad_norm_ep cuda reference, as PyTorch's FSDP2 EP-aware clipping does
// it fused (foreach norms in f32, the expert scale applied in the dtype, one
// all-reduce: PKB's EP-FSDP + EP stages tile the world, so one world
// all-reduce of the summed terms is the same): per-block f32 sums of squares of
// g and of e' = dtype(e / ep_size), one block adds the partials in a fixed
// order (deterministic), ncclAllReduce of one f32, then one kernel writes both
// clipped gradients and total_norm (coef read on device: no host round trip).
// The partials' sum and the all-reduce: common/clip_norm.cuh (shared with
// clip_grad_norm).
// Written with the candidate ABI: it is also compiled as a candidate
// (ref_cuda_clip_grad_norm_ep.so).
#include "pkforge/candidate.h"
#include "../common/clip_norm.cuh"

extern "C" int pkf_setup(pkf_context* ctx) { return pkf_clip_setup(ctx); }
extern "C" void pkf_teardown(pkf_context* ctx) { pkf_clip_teardown(ctx); }

__device__ __forceinline__ float pkf_cge_round(float v, pkf_dtype dt) {
  return dt == PKF_F32 ? v : dt == PKF_F16 ? __half2float(__float2half_rn(v)) : __bfloat162float(__float2bfloat16_rn(v));
}

__global__ void pkf_cge_sumsq(const void* g, const void* e, float scale, pkf_dtype dt, int64_t n, float* partial) {
  float acc = 0.0f;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const float a = pkf_dload(g, dt, i), b = pkf_cge_round(pkf_dload(e, dt, i) * scale, dt);
    acc += a * a + b * b;
  }
  const float s = pkf_cu_block_sum(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
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
  pkf_clip_state* st = (pkf_clip_state*)ctx->user_state;
  cudaStream_t s = (cudaStream_t)stream;
  const pkf_dtype dt = out[0].dtype;
  const int64_t n = pkf_cu_numel(&in[0]);
  const int ep_size = ctx->world_size / 2 > 1 ? ctx->world_size / 2 : 1;
  const float scale = 1.0f / (float)ep_size;
  const int blocks = pkf_clip_blocks(n);
  pkf_cge_sumsq<<<blocks, 256, 0, s>>>(in[0].data, in[1].data, scale, dt, n, st->partial);
  float* ss = NULL;
  const int rc = pkf_clip_reduce(ctx, st, blocks, /*all_reduce=*/ctx->world_size > 1, s, &ss);
  if (rc != 0) return rc;
  pkf_cge_scale<<<pkf_cu_blocks(n), 256, 0, s>>>(in[0].data, in[1].data, out[0].data, out[1].data, out[2].data, scale,
                                                 dt, n, ss);
  PKF_CU(cudaGetLastError());
  return 0;
}
