// tp_rmsnorm host reference: hidden dimension H is sharded across ranks;
// ss[m] = sum over ranks and local columns of x^2 (f32, an allreduce of sums
// of squares), y = x * rsqrt(ss[m] / H + 1e-5) * w.
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
  const int64_t rows = in[0].shape[0], hl = in[0].shape[1];
  const float h = (float)(hl * ctx->world_size);
  for (int64_t m = 0; m < rows; ++m) {
    float ss = 0.0f;
    for (int32_t j = 0; j < ctx->world_size; ++j)
      for (int64_t c = 0; c < hl; ++c) {
        const float v = pkf_load(peer[j][0], dt, m * hl + c);
        ss += v * v;
      }
    const float scale = 1.0f / sqrtf(ss / h + 1e-5f);
    for (int64_t c = 0; c < hl; ++c)
      pkf_store(out[0].data, dt, m * hl + c,
                pkf_load(in[0].data, dt, m * hl + c) * scale * pkf_load(in[1].data, dt, c));
  }
  return ctx->barrier(ctx);
}
