// sample_sort, independent implementation (from prompt.md): the global
// position of every element is the number of elements smaller than it plus
// the number of equal ones earlier in (rank, index) order; keep the elements
// whose position falls in my block.
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
  const int64_t n = in[0].shape[0], total = n * w, lo = ctx->rank * n;
  int64_t placed = 0;
  for (int64_t a = 0; a < total; ++a) {
    const double x = ind_get(all[a / n].data[0], dt, a % n);
    int64_t pos = 0;
    for (int64_t b = 0; b < total; ++b) {
      const double y = ind_get(all[b / n].data[0], dt, b % n);
      pos += y < x || (y == x && b < a);
    }
    if (pos >= lo && pos < lo + n) {
      ind_put(out[0].data, dt, pos - lo, x);
      ++placed;
    }
  }
  if (placed != n) return 21;
  return ind_done(ctx);
}
