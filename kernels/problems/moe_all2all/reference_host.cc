// moe_all2all host reference: split[j] = M/world rows (the last rank's split
// takes the remainder) at off[j] = j*(M/world); rank r's y = rows
// [off[r], off[r]+split[r]) of every rank's x, in rank order.
#include "pkforge/candidate.h"
#include "../common/host_math.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream; (void)n_out;
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const int32_t w = ctx->world_size, r = ctx->rank;
  const int64_t m = in[0].shape[0], row_bytes = in[0].shape[1] * pkf_dtype_size(in[0].dtype);
  const int64_t chunk = m / w, mine = r == w - 1 ? chunk + m % w : chunk;
  for (int32_t i = 0; i < w; ++i)
    memcpy((char*)out[0].data + i * mine * row_bytes, (const char*)peer[i][0] + r * chunk * row_bytes,
           (size_t)(mine * row_bytes));
  return ctx->barrier(ctx);
}
