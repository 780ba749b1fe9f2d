// reducescatter_rmsnorm, independent implementation (from prompt.md): mean over
// ranks of my rows, RMS-normalized over the hidden dimension, times gamma; double.
#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t my_rows = out[0].shape[0], hidden = out[0].shape[1];
  for (int64_t i = 0; i < my_rows; ++i) {
    const int64_t row = ctx->rank * my_rows + i;
    double mean_sq = 0;
    for (int64_t c = 0; c < hidden; ++c) {
      double mean = 0;
      for (int32_t j = 0; j < ctx->world_size; ++j) mean += ind_get(all[j].data[0], dt, row * hidden + c);
      mean /= ctx->world_size;
      mean_sq += mean * mean / (double)hidden;
    }
    const double scale = 1.0 / sqrt(mean_sq + 1e-5);
    for (int64_t c = 0; c < hidden; ++c) {
      double mean = 0;
      for (int32_t j = 0; j < ctx->world_size; ++j) mean += ind_get(all[j].data[0], dt, row * hidden + c);
      mean /= ctx->world_size;
      ind_put(out[0].data, dt, i * hidden + c, mean * scale * ind_get(in[1].data, dt, c));
    }
  }
  return ind_done(ctx);
}
