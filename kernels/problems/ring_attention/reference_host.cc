// ring_attention host reference: for rank r's query i (global position
// g = r*S + i), batch b, head h: scores s_p = (q . k_p) * D^-0.5 over global
// key positions p <= g (rank p / S, position p % S), softmax in f32 (max
// subtracted), out = sum_p softmax_p * v_p, rounded once.
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
  const int64_t bb = in[0].shape[0], s_len = in[0].shape[1], nh = in[0].shape[2], hd = in[0].shape[3];
  const float scale = 1.0f / sqrtf((float)hd);
  const int64_t keys = (int64_t)ctx->world_size * s_len;
  float* sc = (float*)malloc(sizeof(float) * (size_t)keys);
  float* acc = (float*)malloc(sizeof(float) * (size_t)hd);
  if (sc == NULL || acc == NULL) return 20;
  for (int64_t b = 0; b < bb; ++b)
    for (int64_t i = 0; i < s_len; ++i)
      for (int64_t h = 0; h < nh; ++h) {
        const int64_t g = ctx->rank * s_len + i, qo = ((b * s_len + i) * nh + h) * hd;
        float mx = -INFINITY;
        for (int64_t p = 0; p <= g; ++p) {
          const void* kp = peer[p / s_len][1];
          const int64_t ko = ((b * s_len + p % s_len) * nh + h) * hd;
          float dot = 0.0f;
          for (int64_t d = 0; d < hd; ++d) dot += pkf_load(in[0].data, dt, qo + d) * pkf_load(kp, dt, ko + d);
          sc[p] = dot * scale;
          if (sc[p] > mx) mx = sc[p];
        }
        float z = 0.0f;
        for (int64_t d = 0; d < hd; ++d) acc[d] = 0.0f;
        for (int64_t p = 0; p <= g; ++p) {
          const float e = expf(sc[p] - mx);
          z += e;
          const void* vp = peer[p / s_len][2];
          const int64_t vo = ((b * s_len + p % s_len) * nh + h) * hd;
          for (int64_t d = 0; d < hd; ++d) acc[d] += e * pkf_load(vp, dt, vo + d);
        }
        for (int64_t d = 0; d < hd; ++d) pkf_store(out[0].data, dt, qo + d, acc[d] / z);
      }
  free(sc);
  free(acc);
  return ctx->barrier(ctx);
}
