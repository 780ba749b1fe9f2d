// vocab_parallel_cross_entropy host reference, in f32 as the cuda reference:
// per row, the max over every rank's shard, then per rank (in rank order) the
// sum of exp(x - max) over its shard, the target's (x - max) from the rank
// that owns it; loss = log(sum) - (x_target - max), rounded once.
#include <math.h>

#include "pkforge/candidate.h"
#include "../common/host_math.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream; (void)n_out;
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const int32_t w = ctx->world_size;
  const pkf_dtype dt = in[0].dtype;
  const int64_t rows = in[0].shape[0] * in[0].shape[1], vl = in[0].shape[2];
  const int64_t* target = (const int64_t*)in[1].data;
  for (int64_t i = 0; i < rows; ++i) {
    float mx = -INFINITY;
    for (int32_t j = 0; j < w; ++j)
      for (int64_t v = 0; v < vl; ++v) mx = fmaxf(mx, pkf_load(peer[j][0], dt, i * vl + v));
    float sum = 0;
    for (int32_t j = 0; j < w; ++j) {
      float part = 0;
      for (int64_t v = 0; v < vl; ++v) part += expf(pkf_load(peer[j][0], dt, i * vl + v) - mx);
      sum += part;
    }
    const int64_t t = target[i], owner = t / vl;
    if (t < 0 || owner >= w) return 21;
    const float pred = pkf_load(peer[owner][0], dt, i * vl + (t - owner * vl)) - mx;
    pkf_store(out[0].data, out[0].dtype, i, logf(sum) - pred);
  }
  return ctx->barrier(ctx);
}
