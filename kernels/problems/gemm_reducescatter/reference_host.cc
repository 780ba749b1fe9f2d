// gemm_reducescatter host reference: y on rank r = rows [r*M/world, (r+1)*M/world)
// of sum over ranks j of A_j @ B_j; f32 accumulation over ranks and K.
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
  const int64_t kl = in[0].shape[1], n_dim = in[1].shape[1], rows = out[0].shape[0];
  for (int64_t m = 0; m < rows; ++m) {
    const int64_t gm = ctx->rank * rows + m;
    for (int64_t n = 0; n < n_dim; ++n) {
      float s = 0.0f;
      for (int32_t j = 0; j < ctx->world_size; ++j)
        for (int64_t k = 0; k < kl; ++k)
          s += pkf_load(peer[j][0], dt, gm * kl + k) * pkf_load(peer[j][1], dt, k * n_dim + n);
      pkf_store(out[0].data, dt, m * n_dim + n, s);
    }
  }
  return ctx->barrier(ctx);
}
