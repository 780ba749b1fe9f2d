// clip_grad_norm host reference: total_norm = sqrt(sum of g^2 over every rank,
// gradient and element), summed in double (the oracle must not lose digits
// over millions of terms); coef = 1/total_norm when total_norm > 1 (max_norm)
// else 1; c_i = g_i * coef (f32, rounded once); out[3] = total_norm.
#include <math.h>

#include "pkforge/candidate.h"
#include "../common/host_math.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream; (void)n_out;
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t n = pkf_numel(&in[0]);
  double ss = 0;
  for (int32_t j = 0; j < ctx->world_size; ++j)
    for (int t = 0; t < 3; ++t)
      for (int64_t i = 0; i < n; ++i) {
        const double v = pkf_load(peer[j][t], dt, i);
        ss += v * v;
      }
  const float total = (float)sqrt(ss);
  const float coef = total > 1.0f ? 1.0f / total : 1.0f;
  for (int t = 0; t < 3; ++t)
    for (int64_t i = 0; i < n; ++i) pkf_store(out[t].data, dt, i, pkf_load(in[t].data, dt, i) * coef);
  pkf_store(out[3].data, dt, 0, total);
  return ctx->barrier(ctx);
}
