// clip_grad_norm_ep host reference: s = 1/ep_size (ep_size = max(1, world/2));
// e' = e * s rounded to the dtype (PKB scales the expert gradient in place);
// total_norm = sqrt(sum over ranks of sum g^2 + sum e'^2), summed in double;
// coef = 1/total_norm when total_norm > 1 else 1; c_g = g * coef,
// c_e = e' * coef (f32, rounded once); out[2] = total_norm.
#include <math.h>

#include "pkforge/candidate.h"
#include "../common/host_math.h"

static float pkf_cge_scaled(const void* e, pkf_dtype dt, int64_t i, float s) {
  uint32_t tmp;
  pkf_store(&tmp, dt, 0, pkf_load(e, dt, i) * s);
  return pkf_load(&tmp, dt, 0);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream; (void)n_out;
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t n = pkf_numel(&in[0]);
  const int ep_size = ctx->world_size / 2 > 1 ? ctx->world_size / 2 : 1;
  const float s = 1.0f / (float)ep_size;
  double ss = 0;
  for (int32_t j = 0; j < ctx->world_size; ++j)
    for (int64_t i = 0; i < n; ++i) {
      const double g = pkf_load(peer[j][0], dt, i), e = pkf_cge_scaled(peer[j][1], dt, i, s);
      ss += g * g + e * e;
    }
  const float total = (float)sqrt(ss);
  const float coef = total > 1.0f ? 1.0f / total : 1.0f;
  for (int64_t i = 0; i < n; ++i) {
    pkf_store(out[0].data, dt, i, pkf_load(in[0].data, dt, i) * coef);
    pkf_store(out[1].data, dt, i, pkf_cge_scaled(in[1].data, dt, i, s) * coef);
  }
  pkf_store(out[2].data, dt, 0, total);
  return ctx->barrier(ctx);
}
