// gemm_allreduce, independent implementation (from prompt.md): y = sum over ranks
// j of A_j @ B_j (each rank's own K shard), in double.
#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t m_rows = in[0].shape[0], k_local = in[0].shape[1], n_cols = in[1].shape[1];
  for (int64_t m = 0; m < m_rows; ++m)
    for (int64_t n = 0; n < n_cols; ++n) {
      double s = 0;
      for (int32_t j = 0; j < ctx->world_size; ++j)
        for (int64_t k = 0; k < k_local; ++k)
          s += ind_get(all[j].data[0], dt, m * k_local + k) * ind_get(all[j].data[1], dt, k * n_cols + n);
      ind_put(out[0].data, dt, m * n_cols + n, s);
    }
  return ind_done(ctx);
}
