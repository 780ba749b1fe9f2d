// kjt_all2all, independent implementation (from prompt.md): first the output
// lengths (feature-major, source-minor) and from them the start of every
// output segment; then walk every source rank's whole jagged batch once and
// copy the samples of my features to their segment.
#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const int32_t w = ctx->world_size, me = ctx->rank;
  const pkf_dtype it = in[0].dtype;
  int64_t first = 0, n_features = 0;
  for (int32_t j = 0; j < w; ++j) {
    if (j == me) first = n_features;
    n_features += 1 + j % 3;
  }
  const int64_t mine = 1 + me % 3, b = in[0].shape[0] / n_features;
  if (mine * w * b > 65536) return 22;
  static int64_t seg_start[65536];
  int64_t pos = 0;
  for (int64_t f = 0; f < mine; ++f)
    for (int32_t src = 0; src < w; ++src)
      for (int64_t s = 0; s < b; ++s) {
        const int64_t n = ind_geti(all[src].data[0], it, (first + f) * b + s);
        const int64_t row = (f * w + src) * b + s;
        ind_puti(out[0].data, it, row, n);
        seg_start[row] = pos;
        pos += n;
      }
  for (int64_t k = 0; k < out[1].shape[0]; ++k) ind_puti(out[1].data, it, k, -1);
  for (int32_t src = 0; src < w; ++src) {
    int64_t v = 0;
    for (int64_t key = 0; key < n_features * b; ++key) {
      const int64_t n = ind_geti(all[src].data[0], it, key), feature = key / b;
      if (feature >= first && feature < first + mine) {
        const int64_t row = ((feature - first) * w + src) * b + key % b;
        for (int64_t x = 0; x < n; ++x)
          ind_puti(out[1].data, it, seg_start[row] + x, ind_geti(all[src].data[1], it, v + x));
      }
      v += n;
    }
  }
  ind_puti(out[2].data, it, 0, (int64_t)w * b);
  for (int32_t i = 0; i < w; ++i) ind_puti(out[3].data, it, i, b);
  return ind_done(ctx);
}
