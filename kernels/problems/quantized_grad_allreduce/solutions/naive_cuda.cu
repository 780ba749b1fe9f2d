// quantized_grad_allreduce naive cuda solution: every rank copies its gradient
// into its symmetric scratch and meets its peers at the host barrier; one
// thread per element then quantizes that element on every rank (its block's
// absmax recomputed from the peer mapping) and averages (f32, rank order).
#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

__global__ void k(pkf_cu_peers x, int w, void* out, pkf_dtype dt, int64_t bs, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t b = i / bs;
    float acc = 0.0f;
    for (int j = 0; j < w; ++j) {
      float amax = 0.0f;
      for (int64_t e = 0; e < bs; ++e) amax = fmaxf(amax, fabsf(pkf_dload(x.p[j], dt, b * bs + e)));
      const float scale = __fdiv_rn(fmaxf(amax, 1e-8f), 127.0f);
      const float q = fminf(fmaxf(rintf(__fdiv_rn(pkf_dload(x.p[j], dt, i), scale)), -127.0f), 127.0f);
      acc += q * scale;
    }
    pkf_dstore(out, dt, i, acc / (float)w);
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out;
  cudaStream_t s = (cudaStream_t)stream;
  const void* peer_in[64][8];
  int rc = pkf_cu_publish_inputs(ctx, in, n_in, peer_in, s);
  if (rc != 0) return rc;
  const int64_t n = pkf_cu_numel(&in[0]);
  k<<<pkf_cu_blocks(n), 256, 0, s>>>(pkf_cu_peer_input(ctx, peer_in, 0), ctx->world_size, out[0].data, out[0].dtype,
                                     in[0].shape[1], n);
  return pkf_cu_finish(ctx, s);
}
