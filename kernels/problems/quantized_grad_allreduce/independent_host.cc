// quantized_grad_allreduce, independent implementation (from prompt.md): the
// quantizer's steps are f32 operations by definition (scale, x / scale, round
// half to even, q * scale), so they are done in float here too; the mean over
// ranks is in double.
#include <math.h>
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
  const int64_t nblk = in[0].shape[0], block = in[0].shape[1];
  double* sum = (double*)calloc((size_t)(nblk * block), sizeof(double));
  if (sum == NULL) return 31;
  for (int32_t r = 0; r < ctx->world_size; ++r)
    for (int64_t b = 0; b < nblk; ++b) {
      double absmax = 0;
      for (int64_t i = 0; i < block; ++i) {
        const double a = fabs(ind_get(all[r].data[0], dt, b * block + i));
        if (a > absmax) absmax = a;
      }
      const float scale = (float)(absmax < 1e-8 ? 1e-8 : absmax) / 127.0f;
      for (int64_t i = 0; i < block; ++i) {
        const float x = (float)ind_get(all[r].data[0], dt, b * block + i);
        float q = rintf(x / scale);
        if (q > 127) q = 127;
        if (q < -127) q = -127;
        sum[b * block + i] += (double)(q * scale);
      }
    }
  for (int64_t i = 0; i < nblk * block; ++i) ind_put(out[0].data, dt, i, sum[i] / ctx->world_size);
  free(sum);
  return ind_done(ctx);
}
