// gemm_reducescatter, independent implementation (from prompt.md): rank r's y =
// rows [r*M/world, (r+1)*M/world) of sum over ranks j of A_j @ B_j, in double.
#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t k_local = in[0].shape[1], n_cols = in[1].shape[1], my_rows = out[0].shape[0];
  for (int64_t m = 0; m < my_rows; ++m) {
    const int64_t row = ctx->rank * my_rows + m;
    for (int64_t n = 0; n < n_cols; ++n) {
      double s = 0;
      for (int32_t j = 0; j < ctx->world_size; ++j)
        for (int64_t k = 0; k < k_local; ++k)
          s += ind_get(all[j].data[0], dt, row * k_local + k) * ind_get(all[j].data[1], dt, k * n_cols + n);
      ind_put(out[0].data, dt, m * n_cols + n, s);
    }
  }
  return ind_done(ctx);
}
