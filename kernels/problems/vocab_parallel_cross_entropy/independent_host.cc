// vocab_parallel_cross_entropy, independent implementation (from prompt.md):
// the global vocabulary walked as one row (rank j's column c is vocabulary
// entry j*V/world + c), cross entropy = log(sum_v exp(x_v)) - x_target in
// double without the max shift (the inputs are in [-1, 1)), rounded once.
#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const pkf_dtype dt = in[0].dtype;
  const int64_t bt = in[0].shape[0] * in[0].shape[1], vl = in[0].shape[2];
  const int64_t v_total = vl * ctx->world_size;
  for (int64_t row = 0; row < bt; ++row) {
    double z = 0, x_target = NAN;
    const int64_t target = ind_geti(in[1].data, in[1].dtype, row);
    for (int64_t g = 0; g < v_total; ++g) {
      const double x = ind_get(all[g / vl].data[0], dt, row * vl + g % vl);
      z += exp(x);
      if (g == target) x_target = x;
    }
    if (isnan(x_target)) return 21;
    ind_put(out[0].data, dt, row, log(z) - x_target);
  }
  return ind_done(ctx);
}
