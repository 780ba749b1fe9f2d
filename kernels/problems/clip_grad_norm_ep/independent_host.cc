// clip_grad_norm_ep, independent implementation (from prompt.md): scale the
// expert gradients by 1/ep_size (rounded to the dtype, as an in-place scale
// would), the global L2 norm of both over all ranks in double, clip to 1.
#include "pkforge/candidate.h"
#include "../common/independent.h"

static double scaled_expert(const void* e, pkf_dtype dt, int64_t i, int ep_size) {
  unsigned char tmp[4];
  ind_put(tmp, dt, 0, ind_get(e, dt, i) / ep_size);
  return ind_get(tmp, dt, 0);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t n = ind_numel(&in[0]);
  int ep_size = ctx->world_size / 2;
  if (ep_size < 1) ep_size = 1;
  double sum_sq = 0;
  for (int32_t r = 0; r < ctx->world_size; ++r)
    for (int64_t i = 0; i < n; ++i) {
      const double g = ind_get(all[r].data[0], dt, i), e = scaled_expert(all[r].data[1], dt, i, ep_size);
      sum_sq += g * g + e * e;
    }
  const double norm = sqrt(sum_sq);
  const double clip = norm > 1.0 ? 1.0 / norm : 1.0;
  for (int64_t i = 0; i < n; ++i) {
    ind_put(out[0].data, dt, i, ind_get(in[0].data, dt, i) * clip);
    ind_put(out[1].data, dt, i, scaled_expert(in[1].data, dt, i, ep_size) * clip);
  }
  ind_put(out[2].data, dt, 0, norm);
  return ind_done(ctx);
}
