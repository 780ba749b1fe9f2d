// allgather_gemm_AT, independent implementation (from prompt.md): column k of
// the full A lives on rank k / (K/world); y = A_full @ B (this rank's B) in double.
#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t rows = out[0].shape[0], cols = out[0].shape[1], k_full = in[1].shape[0];
  const int64_t k_local = k_full / ctx->world_size;
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t n = 0; n < cols; ++n) {
      double s = 0;
      for (int64_t k = 0; k < k_full; ++k) {
        const double a = ind_get(all[k / k_local].data[0], dt, m * k_local + k % k_local);
        s += a * ind_get(in[1].data, dt, k * cols + n);
      }
      ind_put(out[0].data, dt, m * cols + n, s);
    }
  return ind_done(ctx);
}
