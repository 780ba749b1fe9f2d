// tp_rmsnorm, independent implementation (from prompt.md): H = world*HL;
// y[m, c] = x[m, c] * w[c] / sqrt(sum over all ranks' columns of X[m, :]^2 / H + 1e-5), in double.
#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t rows = in[0].shape[0], hl = in[0].shape[1];
  const double h = (double)hl * ctx->world_size;
  for (int64_t m = 0; m < rows; ++m) {
    double ss = 0;
    for (int32_t r = 0; r < ctx->world_size; ++r)
      for (int64_t c = 0; c < hl; ++c) {
        const double v = ind_get(all[r].data[0], dt, m * hl + c);
        ss += v * v;
      }
    const double inv = 1.0 / sqrt(ss / h + 1e-5);
    for (int64_t c = 0; c < hl; ++c)
      ind_put(out[0].data, dt, m * hl + c, ind_get(in[0].data, dt, m * hl + c) * inv * ind_get(in[1].data, dt, c));
  }
  return ind_done(ctx);
}
