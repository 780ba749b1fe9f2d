// fused_adam_allgather, independent implementation (from prompt.md): Adam at
// step 1 from zero state in double, bias corrections written out in full.
#include <math.h>

#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t shard = in[0].shape[0];
  const double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  const int step = 1;
  for (int32_t r = 0; r < ctx->world_size; ++r)
    for (int64_t i = 0; i < shard; ++i) {
      const double g = ind_get(all[r].data[0], dt, i), w = ind_get(all[r].data[1], dt, i);
      const double m = beta1 * 0.0 + (1 - beta1) * g;
      const double v = beta2 * 0.0 + (1 - beta2) * g * g;
      const double m_hat = m / (1 - pow(beta1, step)), v_hat = v / (1 - pow(beta2, step));
      ind_put(out[0].data, dt, r * shard + i, w - lr * m_hat / (sqrt(v_hat) + eps));
      if (r == ctx->rank) {
        ind_put(out[1].data, dt, i, m);
        ind_put(out[2].data, dt, i, v);
      }
    }
  return ind_done(ctx);
}
