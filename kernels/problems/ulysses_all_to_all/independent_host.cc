// ulysses_all_to_all, independent implementation (from prompt.md): element by
// element, y[m, j*N + n] = x_j[r*M/world + m, n].
#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t n_cols = in[0].shape[1], my_rows = out[0].shape[0];
  for (int64_t m = 0; m < my_rows; ++m)
    for (int32_t j = 0; j < ctx->world_size; ++j)
      for (int64_t n = 0; n < n_cols; ++n)
        ind_put(out[0].data, dt, m * ctx->world_size * n_cols + j * n_cols + n,
                ind_get(all[j].data[0], dt, (ctx->rank * my_rows + m) * n_cols + n));
  return ind_done(ctx);
}
