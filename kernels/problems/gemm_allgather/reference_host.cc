// gemm_allgather host reference: y[:, j*NL:(j+1)*NL] = A @ B_j (B_j = rank j's
// column shard [K, NL]); f32 accumulation, rounded once.
#include "pkforge/candidate.h"
#include "../common/host_math.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream; (void)n_out;
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t m_dim = in[0].shape[0], k_dim = in[0].shape[1], nl = in[1].shape[1];
  const int64_t n_dim = nl * ctx->world_size;
  for (int32_t j = 0; j < ctx->world_size; ++j)
    for (int64_t m = 0; m < m_dim; ++m)
      for (int64_t c = 0; c < nl; ++c) {
        float s = 0.0f;
        for (int64_t k = 0; k < k_dim; ++k)
          s += pkf_load(in[0].data, dt, m * k_dim + k) * pkf_load(peer[j][1], dt, k * nl + c);
        pkf_store(out[0].data, dt, m * n_dim + j * nl + c, s);
      }
  return ctx->barrier(ctx);
}
