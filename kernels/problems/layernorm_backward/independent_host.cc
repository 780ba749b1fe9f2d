// layernorm_backward, independent implementation (from prompt.md): the batch is
// the concatenation of every rank's rows; column sums in double.
#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  for (int64_t c = 0; c < cols; ++c) {
    double dgamma = 0, dbeta = 0;
    for (int32_t r = 0; r < ctx->world_size; ++r)
      for (int64_t m = 0; m < rows; ++m) {
        const double x = ind_get(all[r].data[0], dt, m * cols + c);
        const double dy = ind_get(all[r].data[1], dt, m * cols + c);
        dgamma += x * dy;
        dbeta += dy;
      }
    ind_put(out[0].data, dt, c, dgamma);
    ind_put(out[1].data, dt, c, dbeta);
  }
  return ind_done(ctx);
}
