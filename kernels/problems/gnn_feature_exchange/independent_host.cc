// gnn_feature_exchange, independent implementation (from prompt.md): walk the
// senders. Sender s sends its gathered chunk k to rank (s + k) mod world,
// whose output chunk for it is (-k) mod world; keep what lands on me.
#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const int32_t w = ctx->world_size;
  const pkf_dtype dt = in[0].dtype;
  const int64_t h = in[0].shape[1], rows = in[1].shape[0] / w;
  for (int32_t s = 0; s < w; ++s)
    for (int32_t k = 0; k < w; ++k) {
      if ((s + k) % w != ctx->rank) continue;
      const int32_t c = (w - k) % w;
      for (int64_t j = 0; j < rows; ++j) {
        const int64_t id = ind_geti(all[s].data[1], in[1].dtype, k * rows + j);
        for (int64_t x = 0; x < h; ++x)
          ind_put(out[0].data, dt, (c * rows + j) * h + x, ind_get(all[s].data[0], dt, id * h + x));
      }
    }
  return ind_done(ctx);
}
