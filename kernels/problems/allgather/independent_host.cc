// allgather, independent implementation (from prompt.md): rows of y, block j = x of rank j.
#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t chunk = ind_numel(&in[0]);
  for (int32_t j = 0; j < ctx->world_size; ++j)
    for (int64_t i = 0; i < chunk; ++i) ind_put(out[0].data, dt, j * chunk + i, ind_get(all[j].data[0], dt, i));
  return ind_done(ctx);
}
