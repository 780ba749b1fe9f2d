// quantized_grad_allreduce host reference: for every rank j and block b (a row
// of [blocks, BS]): scale = max(max |x|, 1e-8) / 127 (f32), q = round half to
// even of x / scale (f32 division), clamped to [-127, 127]; dequantized q * scale
// (f32); acc = f32 sum over ranks in rank order; out = acc / world, rounded once.
#include <math.h>
#include <stdlib.h>

#include "pkforge/candidate.h"
#include "../common/host_math.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream; (void)n_out;
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t blocks = in[0].shape[0], bs = in[0].shape[1];
  float* acc = (float*)calloc((size_t)(blocks * bs), sizeof(float));
  if (acc == NULL) return 20;
  for (int32_t j = 0; j < ctx->world_size; ++j)
    for (int64_t b = 0; b < blocks; ++b) {
      float amax = 0.0f;
      for (int64_t i = 0; i < bs; ++i) amax = fmaxf(amax, fabsf(pkf_load(peer[j][0], dt, b * bs + i)));
      const float scale = fmaxf(amax, 1e-8f) / 127.0f;
      for (int64_t i = 0; i < bs; ++i) {
        float q = nearbyintf(pkf_load(peer[j][0], dt, b * bs + i) / scale);
        q = fminf(fmaxf(q, -127.0f), 127.0f);
        acc[b * bs + i] += q * scale;
      }
    }
  for (int64_t i = 0; i < blocks * bs; ++i) pkf_store(out[0].data, dt, i, acc[i] / (float)ctx->world_size);
  free(acc);
  return ctx->barrier(ctx);
}
