// embedding_lookup, independent implementation (from prompt.md): a counting
// sort of the index positions by owner (counts, exclusive offsets, scatter),
// then element by element from the owner's shard (through doubles).
#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const int32_t w = ctx->world_size;
  const pkf_dtype dt = out[0].dtype;
  const int64_t n_idx = in[0].shape[0], m = in[1].shape[0], n = in[1].shape[1];
  if (n_idx > 65536) return 22;
  static int64_t pos[65536];
  int64_t count[64] = {0}, start[64] = {0};
  for (int64_t i = 0; i < n_idx; ++i) {
    const int64_t v = ind_geti(in[0].data, in[0].dtype, i);
    if (v < 0 || v >= w * m) return 21;
    ++count[v / m];
  }
  for (int32_t j = 1; j < w; ++j) start[j] = start[j - 1] + count[j - 1];
  for (int64_t i = 0; i < n_idx; ++i) pos[start[ind_geti(in[0].data, in[0].dtype, i) / m]++] = i;
  for (int64_t k = 0; k < n_idx; ++k) {
    const int64_t v = ind_geti(in[0].data, in[0].dtype, pos[k]);
    const int64_t owner = v / m, r = v % m;
    for (int64_t c = 0; c < n; ++c) ind_put(out[0].data, dt, k * n + c, ind_get(all[owner].data[1], dt, r * n + c));
  }
  return ind_done(ctx);
}
