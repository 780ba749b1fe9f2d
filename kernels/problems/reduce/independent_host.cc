// reduce, independent implementation (from prompt.md): rank 0 gets the sum over
// ranks (double); the other ranks have no output but take part in the exchange.
#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  if (ctx->rank == 0 && n_out == 1) {
    const pkf_dtype dt = out[0].dtype;
    const int64_t n = ind_numel(&out[0]);
    for (int64_t i = 0; i < n; ++i) {
      double s = 0;
      for (int32_t r = 0; r < ctx->world_size; ++r) s += ind_get(all[r].data[0], dt, i);
      ind_put(out[0].data, dt, i, s);
    }
  }
  return ind_done(ctx);
}
