// scatter, independent implementation (from prompt.md): rank r's y = rows
// [r*M, (r+1)*M) of rank 0's x (only rank 0 has an input).
#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  if (all[0].n != 1) return 20;
  const pkf_dtype dt = out[0].dtype;
  const int64_t chunk = ind_numel(&out[0]);
  for (int64_t i = 0; i < chunk; ++i)
    ind_put(out[0].data, dt, i, ind_get(all[0].data[0], dt, ctx->rank * chunk + i));
  return ind_done(ctx);
}
