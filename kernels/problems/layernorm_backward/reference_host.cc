// layernorm_backward host reference: d_gamma[c] = sum over ranks j and rows m of
// dY_j[m, c] * X_hat_j[m, c], d_beta[c] = sum of dY_j[m, c]; f32 accumulation
// (ranks in order, rows in order), rounded once.
#include "pkforge/candidate.h"
#include "../common/host_math.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream; (void)n_out;
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t m_dim = in[0].shape[0], n_dim = in[0].shape[1];
  for (int64_t c = 0; c < n_dim; ++c) {
    float g = 0.0f, b = 0.0f;
    for (int32_t j = 0; j < ctx->world_size; ++j)
      for (int64_t m = 0; m < m_dim; ++m) {
        const float dy = pkf_load(peer[j][1], dt, m * n_dim + c);
        g += dy * pkf_load(peer[j][0], dt, m * n_dim + c);
        b += dy;
      }
    pkf_store(out[0].data, dt, c, g);
    pkf_store(out[1].data, dt, c, b);
  }
  return ctx->barrier(ctx);
}
