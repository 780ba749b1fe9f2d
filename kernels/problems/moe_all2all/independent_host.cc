// moe_all2all, independent implementation (from prompt.md): walk rank i's
// rows, keep those whose destination (by the split rule) is me, in order.
#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t m = in[0].shape[0], n = in[0].shape[1], base = m / ctx->world_size;
  int64_t written = 0;
  for (int32_t i = 0; i < ctx->world_size; ++i)
    for (int64_t row = 0; row < m; ++row) {
      int64_t dest = row / base;  // rows past the last full chunk belong to the last rank
      if (dest > ctx->world_size - 1) dest = ctx->world_size - 1;
      if (dest != ctx->rank) continue;
      for (int64_t c = 0; c < n; ++c) ind_put(out[0].data, dt, written * n + c, ind_get(all[i].data[0], dt, row * n + c));
      ++written;
    }
  if (written != out[0].shape[0]) return 21;
  return ind_done(ctx);
}
