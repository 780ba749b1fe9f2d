// moe_token_preprocess, independent implementation (from prompt.md): for
// every output entry, count the matching (token, slot) pairs directly in the
// source rank's routing (an expert range test per entry, no count table).
#include "pkforge/candidate.h"
#include "../common/independent.h"

static int64_t count_in_range(const ind_inputs* src, const pkf_tensor* sel, int64_t lo, int64_t hi) {
  int64_t c = 0;
  const int64_t n = sel->shape[0] * sel->shape[1];
  for (int64_t k = 0; k < n; ++k) {
    const int64_t x = ind_geti(src->data[0], sel->dtype, k);
    c += x >= lo && x < hi;
  }
  return c;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const int32_t w = ctx->world_size, me = ctx->rank;
  const int64_t el = out[3].shape[0];
  for (int64_t l = 0; l < el; ++l) {
    int64_t total = 0;
    for (int32_t i = 0; i < w; ++i) {
      const int64_t expert = me * el + l;
      const int64_t c = count_in_range(&all[i], &in[0], expert, expert + 1);
      ind_puti(out[2].data, out[2].dtype, i * el + l, c);
      total += c;
    }
    ind_puti(out[3].data, out[3].dtype, l, total);
  }
  for (int32_t j = 0; j < w; ++j) {
    ind_puti(out[0].data, out[0].dtype, j, count_in_range(&all[me], &in[0], j * el, (j + 1) * el));
    ind_puti(out[1].data, out[1].dtype, j, count_in_range(&all[j], &in[0], me * el, (me + 1) * el));
  }
  return ind_done(ctx);
}
