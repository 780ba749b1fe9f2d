// ulysses_gather_seq_scatter_heads_qkv host reference: with HD = NH*D (the
// input's last dim / 3) and C = HD/world, y[b, j*T + t, s*C + c] =
// x_j[b, t, s*HD + r*C + c] (an exact copy of the bytes).
#include <string.h>

#include "pkforge/candidate.h"
#include "../common/host_math.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream; (void)n_out;
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const int64_t es = pkf_dtype_size(in[0].dtype);
  const int32_t w = ctx->world_size;
  const int64_t bb = in[0].shape[0], t_in = in[0].shape[1], hd = in[0].shape[2] / 3, c = hd / w;
  char* y = (char*)out[0].data;
  for (int64_t b = 0; b < bb; ++b)
    for (int32_t j = 0; j < w; ++j)
      for (int64_t t = 0; t < t_in; ++t)
        for (int s = 0; s < 3; ++s) {
          const int64_t dst = (b * w * t_in + j * t_in + t) * 3 * c + s * c;
          const int64_t src = (b * t_in + t) * 3 * hd + s * hd + ctx->rank * c;
          memcpy(y + dst * es, (const char*)peer[j][0] + src * es, (size_t)(c * es));
        }
  return ctx->barrier(ctx);
}
