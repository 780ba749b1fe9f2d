// rope_allgather, independent implementation (from prompt.md): every rank's
// shard rotated (x*cos + rotate_half(x)*sin) in double and concatenated along
// the sequence; loops over the output, looking up the owning rank.
#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t batch = out[0].shape[0], seq = out[0].shape[1], heads = out[0].shape[2];
  const int64_t dim = out[0].shape[3], local = in[0].shape[1];
  for (int32_t o = 0; o < n_out; ++o) {
    int64_t i = 0;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t p = 0; p < seq; ++p) {
        const ind_inputs* owner = &all[p / local];
        const int64_t s = p % local;
        for (int64_t h = 0; h < heads; ++h)
          for (int64_t d = 0; d < dim; ++d, ++i) {
            const int64_t row = ((b * local + s) * heads + h) * dim;
            const int64_t partner = d < dim / 2 ? d + dim / 2 : d - dim / 2;
            const double sign = d < dim / 2 ? -1.0 : 1.0;
            const double c = ind_get(owner->data[2], dt, (b * local + s) * dim + d);
            const double sn = ind_get(owner->data[3], dt, (b * local + s) * dim + d);
            ind_put(out[o].data, dt, i,
                    ind_get(owner->data[o], dt, row + d) * c + sign * ind_get(owner->data[o], dt, row + partner) * sn);
          }
      }
  }
  return ind_done(ctx);
}
