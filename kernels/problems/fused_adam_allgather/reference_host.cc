// fused_adam_allgather host reference: every rank computes every rank's shard
// update (f32, constants rounded to f32, PKB's order of operations) with zero
// initial state at step 1: m = (1-b1) g, v = (1-b2) g*g, m_hat = m / (1-b1),
// v_hat = v / (1-b2), w' = w + (-lr) * (m_hat / (sqrt(v_hat) + eps)).
#include <math.h>

#include "pkforge/candidate.h"
#include "../common/host_math.h"

static void pkf_adam_step(float g, float w, float* m, float* v, float* w_new) {
  const float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  const float bc1 = 1.0f - b1, bc2 = 1.0f - b2;  // step 1
  *m = (1.0f - b1) * g;
  *v = (1.0f - b2) * g * g;
  const float m_hat = *m / bc1, v_hat = *v / bc2;
  *w_new = w + (-lr) * (m_hat / (sqrtf(v_hat) + eps));
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream; (void)n_out;
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t p = in[0].shape[0];
  for (int32_t j = 0; j < ctx->world_size; ++j)
    for (int64_t i = 0; i < p; ++i) {
      float m, v, w;
      pkf_adam_step(pkf_load(peer[j][0], dt, i), pkf_load(peer[j][1], dt, i), &m, &v, &w);
      pkf_store(out[0].data, dt, j * p + i, w);
      if (j == ctx->rank) {
        pkf_store(out[1].data, dt, i, m);
        pkf_store(out[2].data, dt, i, v);
      }
    }
  return ctx->barrier(ctx);
}
