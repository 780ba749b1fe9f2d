// layernorm_backward naive cuda solution: every rank copies its inputs into its
// symmetric scratch and meets its peers at the host barrier; one thread per
// column then sums dY*X_hat and dY over every rank's rows through the peer
// mappings (f32, in the host oracle's order).
#include "pkforge/candidate.h"
#include "../../common/cuda_util.cuh"

__global__ void k(pkf_cu_peers x, pkf_cu_peers dy, int w, void* dgamma, void* dbeta, pkf_dtype dt, int64_t m,
                  int64_t n) {
  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < n; c += (int64_t)gridDim.x * blockDim.x) {
    float g = 0.0f, b = 0.0f;
    for (int j = 0; j < w; ++j)
      for (int64_t r = 0; r < m; ++r) {
        const float d = pkf_dload(dy.p[j], dt, r * n + c);
        g += d * pkf_dload(x.p[j], dt, r * n + c);
        b += d;
      }
    pkf_dstore(dgamma, dt, c, g);
    pkf_dstore(dbeta, dt, c, b);
  }
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out;
  cudaStream_t s = (cudaStream_t)stream;
  const void* peer_in[64][8];
  int rc = pkf_cu_publish_inputs(ctx, in, n_in, peer_in, s);
  if (rc != 0) return rc;
  const int64_t n = in[0].shape[1];
  k<<<pkf_cu_blocks(n), 256, 0, s>>>(pkf_cu_peer_input(ctx, peer_in, 0), pkf_cu_peer_input(ctx, peer_in, 1),
                                     ctx->world_size, out[0].data, out[1].data, out[0].dtype, in[0].shape[0], n);
  return pkf_cu_finish(ctx, s);
}
