// clip_grad_norm_ep naive cuda solution: every rank copies its inputs into its
// symmetric scratch and meets its peers at the host barrier; one block sums
// the squares of every rank's g and scaled e through the peer mappings (f32),
// a second kernel scales the local gradients.
#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

extern "C" int pkf_setup(pkf_context* ctx) {
  float* ss = NULL;
  PKF_CU(cudaMalloc(&ss, sizeof(float)));
  ctx->user_state = ss;
  return 0;
}
extern "C" void pkf_teardown(pkf_context* ctx) {
  if (ctx->user_state) cudaFree(ctx->user_state);
}

__device__ float scaled(const void* e, pkf_dtype dt, int64_t i, float s) {
  const float v = pkf_dload(e, dt, i) * s;
  return dt == PKF_F32 ? v : dt == PKF_F16 ? __half2float(__float2half_rn(v)) : __bfloat162float(__float2bfloat16_rn(v));
}

__global__ void sumsq(pkf_cu_peers g, pkf_cu_peers e, int w, float s, pkf_dtype dt, int64_t n, float* ss) {
  __shared__ float part[256];
  float acc = 0.0f;
  for (int j = 0; j < w; ++j)
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const float a = pkf_dload(g.p[j], dt, i), b = scaled(e.p[j], dt, i, s);
      acc += a * a + b * b;
    }
  part[threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.0f;
    for (int k = 0; k < (int)blockDim.x; ++k) t += part[k];
    *ss = t;
  }
}

__global__ void clip(const void* g, const void* e, void* cg, void* ce, void* norm, float s, pkf_dtype dt, int64_t n,
                     const float* ss) {
  const float total = sqrtf(*ss);
  const float coef = total > 1.0f ? 1.0f / total : 1.0f;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    pkf_dstore(cg, dt, i, pkf_dload(g, dt, i) * coef);
    pkf_dstore(ce, dt, i, scaled(e, dt, i, s) * coef);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) pkf_dstore(norm, dt, 0, total);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out;
  cudaStream_t s = (cudaStream_t)stream;
  const void* peer_in[64][8];
  int rc = pkf_cu_publish_inputs(ctx, in, n_in, peer_in, s);
  if (rc != 0) return rc;
  const int64_t n = pkf_cu_numel(&in[0]);
  const pkf_dtype dt = out[0].dtype;
  const float scale = 1.0f / (float)(ctx->world_size / 2 > 1 ? ctx->world_size / 2 : 1);
  float* ss = (float*)ctx->user_state;
  sumsq<<<1, 256, 0, s>>>(pkf_cu_peer_input(ctx, peer_in, 0), pkf_cu_peer_input(ctx, peer_in, 1), ctx->world_size,
                          scale, dt, n, ss);
  clip<<<pkf_cu_blocks(n), 256, 0, s>>>(in[0].data, in[1].data, out[0].data, out[1].data, out[2].data, scale, dt, n, ss);
  return pkf_cu_finish(ctx, s);
}
