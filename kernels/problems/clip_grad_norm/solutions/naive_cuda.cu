// clip_grad_norm naive cuda solution: every rank copies its inputs into its
// symmetric scratch and meets its peers at the host barrier; one block then
// sums the squares of every rank's three gradients through the peer mappings
// (f32), and a second kernel scales the local gradients.
#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

typedef struct {
  const void* g[3][64];
} peers3;

extern "C" int pkf_setup(pkf_context* ctx) {
  float* ss = NULL;
  PKF_CU(cudaMalloc(&ss, sizeof(float)));
  ctx->user_state = ss;
  return 0;
}
extern "C" void pkf_teardown(pkf_context* ctx) {
  if (ctx->user_state) cudaFree(ctx->user_state);
}

__global__ void sumsq(peers3 x, int w, pkf_dtype dt, int64_t n, float* ss) {
  __shared__ float part[256];
  float acc = 0.0f;
  for (int j = 0; j < w; ++j)
    for (int t = 0; t < 3; ++t)
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const float v = pkf_dload(x.g[t][j], dt, i);
        acc += v * v;
      }
  part[threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (int k = 0; k < (int)blockDim.x; ++k) s += part[k];
    *ss = s;
  }
}

__global__ void scale(const void* g0, const void* g1, const void* g2, void* c0, void* c1, void* c2,
                      void* norm, pkf_dtype dt, int64_t n, const float* ss) {
  const float total = sqrtf(*ss);
  const float coef = total > 1.0f ? 1.0f / total : 1.0f;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    pkf_dstore(c0, dt, i, pkf_dload(g0, dt, i) * coef);
    pkf_dstore(c1, dt, i, pkf_dload(g1, dt, i) * coef);
    pkf_dstore(c2, dt, i, pkf_dload(g2, dt, i) * coef);
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
  peers3 x;
  memset(&x, 0, sizeof x);
  for (int t = 0; t < 3; ++t)
    for (int j = 0; j < ctx->world_size && j < 64; ++j) x.g[t][j] = peer_in[j][t];
  const int64_t n = pkf_cu_numel(&in[0]);
  const pkf_dtype dt = out[0].dtype;
  float* ss = (float*)ctx->user_state;
  sumsq<<<1, 256, 0, s>>>(x, ctx->world_size, dt, n, ss);
  scale<<<pkf_cu_blocks(n), 256, 0, s>>>(in[0].data, in[1].data, in[2].data, out[0].data, out[1].data,
                                         out[2].data, out[3].data, dt, n, ss);
  return pkf_cu_finish(ctx, s);
}
