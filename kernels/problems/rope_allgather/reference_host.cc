// rope_allgather host reference: for every rank j, e = x*cos + rotate_half(x)*sin
// of rank j's q and k (f32, rounded once) written at positions [j*S, (j+1)*S).
#include "pkforge/candidate.h"
#include "../common/host_math.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream; (void)n_out;
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t b_n = in[0].shape[0], s_n = in[0].shape[1], h_n = in[0].shape[2], d_n = in[0].shape[3];
  const int64_t half = d_n / 2, gs = (int64_t)ctx->world_size * s_n;
  for (int32_t j = 0; j < ctx->world_size; ++j)
    for (int32_t t = 0; t < 2; ++t)  // q, k
      for (int64_t b = 0; b < b_n; ++b)
        for (int64_t s = 0; s < s_n; ++s)
          for (int64_t h = 0; h < h_n; ++h)
            for (int64_t d = 0; d < d_n; ++d) {
              const int64_t x = ((b * s_n + s) * h_n + h) * d_n, cs = (b * s_n + s) * d_n + d;
              const float v = pkf_load(peer[j][t], dt, x + d);
              const float rot = d < half ? -pkf_load(peer[j][t], dt, x + d + half)
                                         : pkf_load(peer[j][t], dt, x + d - half);
              const float e = v * pkf_load(peer[j][2], dt, cs) + rot * pkf_load(peer[j][3], dt, cs);
              pkf_store(out[t].data, dt, ((b * gs + j * s_n + s) * h_n + h) * d_n + d, e);
            }
  return ctx->barrier(ctx);
}
