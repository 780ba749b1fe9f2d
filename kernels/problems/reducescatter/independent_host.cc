// reducescatter, independent implementation (from prompt.md): rank r keeps rows
// [r*M, (r+1)*M) of the sum over ranks, summed in double.
#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t chunk = ind_numel(&out[0]);
  for (int64_t i = 0; i < chunk; ++i) {
    double s = 0;
    for (int32_t j = 0; j < ctx->world_size; ++j) s += ind_get(all[j].data[0], dt, ctx->rank * chunk + i);
    ind_put(out[0].data, dt, i, s);
  }
  return ind_done(ctx);
}
