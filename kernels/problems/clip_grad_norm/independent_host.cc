// clip_grad_norm, independent implementation (from prompt.md): the global L2
// norm of all three gradients over all ranks, in double; clip to max_norm 1.
#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t n = ind_numel(&in[0]);
  double sum_sq = 0;
  for (int t = 0; t < 3; ++t)
    for (int32_t r = 0; r < ctx->world_size; ++r)
      for (int64_t i = 0; i < n; ++i) sum_sq += ind_get(all[r].data[t], dt, i) * ind_get(all[r].data[t], dt, i);
  const double norm = sqrt(sum_sq);
  const double scale = norm > 1.0 ? 1.0 / norm : 1.0;
  for (int t = 0; t < 3; ++t)
    for (int64_t i = 0; i < n; ++i) ind_put(out[t].data, dt, i, ind_get(in[t].data, dt, i) * scale);
  ind_put(out[3].data, dt, 0, norm);
  return ind_done(ctx);
}
