// allgather_gemm, independent implementation (from prompt.md): column c of rank
// r's A is column r*K/world + c of the full A; y = A_full @ B, dot products in double.
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
      for (int32_t r = 0; r < ctx->world_size; ++r)
        for (int64_t c = 0; c < k_local; ++c)
          s += ind_get(all[r].data[0], dt, m * k_local + c) *
               ind_get(in[1].data, dt, (r * k_local + c) * n_cols + n);
      ind_put(out[0].data, dt, m * n_cols + n, s);
    }
  return ind_done(ctx);
}
