// gemm_allgather, independent implementation (from prompt.md): the full weight
// is rank j's shard in columns [j*N/world, (j+1)*N/world); y = A @ B_full in double.
#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t rows = out[0].shape[0], cols = out[0].shape[1], k_dim = in[0].shape[1];
  const int64_t per_rank = cols / ctx->world_size;
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t n = 0; n < cols; ++n) {
      const int32_t owner = (int32_t)(n / per_rank);
      const int64_t c = n % per_rank;
      double s = 0;
      for (int64_t k = 0; k < k_dim; ++k)
        s += ind_get(in[0].data, dt, m * k_dim + k) * ind_get(all[owner].data[1], dt, k * per_rank + c);
      ind_put(out[0].data, dt, m * cols + n, s);
    }
  return ind_done(ctx);
}
