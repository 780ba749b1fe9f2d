// tp_rmsnorm naive cuda solution: y = x * rsqrt(mean of x^2 over the full row + 1e-5) * w.
// Every rank copies its inputs into its symmetric scratch, meets its peers at
// the host barrier and then reads their inputs through the peer mappings
// (one thread per output element, f32 accumulation in the host oracle's order).
#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

__global__ void k(pkf_cu_peers x, const void* xl, const void* wt, int w, void* y, pkf_dtype dt, int64_t hl, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t m = i / hl, c = i % hl;
    float ss = 0.0f;
    for (int j = 0; j < w; ++j)
      for (int64_t q = 0; q < hl; ++q) {
        const float v = pkf_dload(x.p[j], dt, m * hl + q);
        ss += v * v;
      }
    const float scale = 1.0f / sqrtf(ss / (float)(hl * w) + 1e-5f);
    pkf_dstore(y, dt, i, pkf_dload(xl, dt, i) * scale * pkf_dload(wt, dt, c));
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out;
  cudaStream_t s = (cudaStream_t)stream;
  const void* peer_in[64][8];
  int rc = pkf_cu_publish_inputs(ctx, in, n_in, peer_in, s);
  if (rc != 0) return rc;
  const int64_t n = pkf_cu_numel(&out[0]);
  k<<<pkf_cu_blocks(n), 256, 0, s>>>(pkf_cu_peer_input(ctx, peer_in, 0), in[0].data, in[1].data, ctx->world_size, out[0].data,
                                     out[0].dtype, in[0].shape[1], n);
  return pkf_cu_finish(ctx, s);
}
