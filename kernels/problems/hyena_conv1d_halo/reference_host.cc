// hyena_conv1d_halo host reference: for each chunk (a, b) and output position t,
// sum over k of weight[c, k] * (padded chunk)[t + k] in f32, rounded once; the
// P = K-1 halo positions are read from the neighbour's published x.
#include "pkforge/candidate.h"
#include "../common/host_math.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream; (void)n_out;
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int32_t r = ctx->rank, w = ctx->world_size;
  const int64_t b_n = in[0].shape[0], c_n = in[0].shape[1], l2 = in[0].shape[2], l = l2 / 2;
  const int64_t k_n = in[1].shape[2], p = k_n - 1;
  for (int64_t b = 0; b < b_n; ++b)
    for (int64_t c = 0; c < c_n; ++c) {
      const int64_t row = (b * c_n + c) * l2;
      for (int chunk = 0; chunk < 2; ++chunk) {
        // Where the halo comes from: (rank, offset of the chunk whose tail it is).
        const void* src = NULL;
        int64_t src_off = 0;
        if (chunk == 0 && r > 0) src = peer[r - 1][0];
        if (chunk == 1) {
          src = r < w - 1 ? peer[r + 1][0] : in[0].data;
          src_off = r < w - 1 ? l : 0;
        }
        for (int64_t t = 0; t < l; ++t) {
          float acc = 0.0f;
          for (int64_t k = 0; k < k_n; ++k) {
            const int64_t g = t + k - p;  // position within this chunk
            float v;
            if (g >= 0) v = pkf_load(in[0].data, dt, row + chunk * l + g);
            else v = src ? pkf_load(src, dt, row + src_off + l + g) : 0.0f;
            acc += pkf_load(in[1].data, dt, c * k_n + k) * v;
          }
          pkf_store(out[0].data, dt, row + chunk * l + t, acc);
        }
      }
    }
  return ctx->barrier(ctx);
}
