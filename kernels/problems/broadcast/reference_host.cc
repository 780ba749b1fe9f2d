// broadcast host reference: y on every rank = x of rank 0 (other ranks' x is ignored).
#include "pkforge/candidate.h"
#include "../common/host_math.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream; (void)n_out;
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  memcpy(out[0].data, peer[0][0], (size_t)(pkf_numel(&out[0]) * pkf_dtype_size(out[0].dtype)));
  return ctx->barrier(ctx);
}
