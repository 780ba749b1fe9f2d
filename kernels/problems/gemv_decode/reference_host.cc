// gemv_decode host reference: logits[t, j*V + v] = bias_j[v] + hidden[t] . weight_j[v]
// (f32 accumulation from the bias, rounded once), reading every rank's shard.
#include "pkforge/candidate.h"
#include "../common/host_math.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream; (void)n_out;
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t t_n = in[0].shape[0], h = in[0].shape[1], v_n = in[1].shape[0];
  const int64_t row = (int64_t)ctx->world_size * v_n;
  for (int32_t j = 0; j < ctx->world_size; ++j)
    for (int64_t t = 0; t < t_n; ++t)
      for (int64_t v = 0; v < v_n; ++v) {
        float acc = pkf_load(peer[j][2], dt, v);
        for (int64_t c = 0; c < h; ++c)
          acc += pkf_load(in[0].data, dt, t * h + c) * pkf_load(peer[j][1], dt, v * h + c);
        pkf_store(out[0].data, dt, t * row + j * v_n + v, acc);
      }
  return ctx->barrier(ctx);
}
