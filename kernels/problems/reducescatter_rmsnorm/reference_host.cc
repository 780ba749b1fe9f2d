// reducescatter_rmsnorm host reference: s = (sum over ranks of rows
// [r*R, (r+1)*R) of x) / world in f32, y = s * rsqrt(mean(s^2) + 1e-5) * gamma,
// rounded once.
#include <math.h>

#include "pkforge/candidate.h"
#include "../common/host_math.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream; (void)n_out;
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t rows = out[0].shape[0], h = out[0].shape[1];
  float s[4096];
  if (h > 4096) return 20;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t base = (ctx->rank * rows + i) * h;
    float ss = 0.0f;
    for (int64_t c = 0; c < h; ++c) {
      float v = 0.0f;
      for (int32_t j = 0; j < ctx->world_size; ++j) v += pkf_load(peer[j][0], dt, base + c);
      s[c] = v / (float)ctx->world_size;
      ss += s[c] * s[c];
    }
    const float inv = 1.0f / sqrtf(ss / (float)h + 1e-5f);
    for (int64_t c = 0; c < h; ++c)
      pkf_store(out[0].data, dt, i * h + c, s[c] * inv * pkf_load(in[1].data, dt, c));
  }
  return ctx->barrier(ctx);
}
