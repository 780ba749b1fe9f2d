// ulysses_gather_heads_scatter_seq host reference: y[b, t, j*NH + h, d] =
// x_j[b, r*TL + t, h, d] with TL = T/world (an exact copy of the bytes).
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
  const int64_t bb = in[0].shape[0], t_in = in[0].shape[1], nh = in[0].shape[2], hd = in[0].shape[3];
  const int64_t tl = t_in / w, row = nh * hd;  // one position's heads are contiguous
  char* y = (char*)out[0].data;
  for (int64_t b = 0; b < bb; ++b)
    for (int64_t t = 0; t < tl; ++t)
      for (int32_t j = 0; j < w; ++j) {
        const int64_t dst = ((b * tl + t) * w + j) * row;
        const int64_t src = (b * t_in + ctx->rank * tl + t) * row;
        memcpy(y + dst * es, (const char*)peer[j][0] + src * es, (size_t)(row * es));
      }
  return ctx->barrier(ctx);
}
