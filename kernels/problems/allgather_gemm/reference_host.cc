// allgather_gemm host reference: A = concat along K (columns) of every rank's
// A_j [M, K/world]; y = A @ B with B [K, N] (replicated here; rank r's own B in
// allgather_gemm_at, whose reference is this file); f32 accumulation (ranks in
// order, k in order), rounded once.
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
  const int64_t m_dim = in[0].shape[0], kl = in[0].shape[1], n_dim = in[1].shape[1];
  for (int64_t m = 0; m < m_dim; ++m)
    for (int64_t n = 0; n < n_dim; ++n) {
      float s = 0.0f;
      for (int32_t j = 0; j < ctx->world_size; ++j)
        for (int64_t k = 0; k < kl; ++k)
          s += pkf_load(peer[j][0], dt, m * kl + k) * pkf_load(in[1].data, dt, (j * kl + k) * n_dim + n);
      pkf_store(out[0].data, dt, m * n_dim + n, s);
    }
  return ctx->barrier(ctx);
}
