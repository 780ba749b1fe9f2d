// conv2d_halo, independent implementation (from prompt.md): assemble this rank's
// padded slab (HL+2 rows, W+2 columns: the neighbours' boundary rows or zeros,
// zero columns) in double, then convolve it without any bounds logic.
#include <stdlib.h>

#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t ch = in[0].shape[1], hl = in[0].shape[2], wd = in[0].shape[3];
  const int64_t ph = hl + 2, pw = wd + 2;
  double* pad = (double*)calloc((size_t)(ch * ph * pw), sizeof(double));
  if (pad == NULL) return 22;
  for (int64_t c = 0; c < ch; ++c)
    for (int64_t prow = 0; prow < ph; ++prow) {
      // Global row of padded row prow: rank*HL + prow - 1.
      const int64_t g = ctx->rank * hl + prow - 1;
      if (g < 0 || g >= ctx->world_size * hl) continue;  // outside the image: zeros
      const int32_t owner = (int32_t)(g / hl);
      const int64_t local = g % hl;
      for (int64_t col = 0; col < wd; ++col)
        pad[(c * ph + prow) * pw + col + 1] = ind_get(all[owner].data[0], dt, (c * hl + local) * wd + col);
    }
  for (int64_t o = 0; o < ch; ++o)
    for (int64_t h = 0; h < hl; ++h)
      for (int64_t w = 0; w < wd; ++w) {
        double s = ind_get(in[2].data, dt, o);
        for (int64_t c = 0; c < ch; ++c)
          for (int64_t kh = 0; kh < 3; ++kh)
            for (int64_t kw = 0; kw < 3; ++kw)
              s += ind_get(in[1].data, dt, ((o * ch + c) * 3 + kh) * 3 + kw) * pad[(c * ph + h + kh) * pw + w + kw];
        ind_put(out[0].data, dt, (o * hl + h) * wd + w, s);
      }
  free(pad);
  return ind_done(ctx);
}
