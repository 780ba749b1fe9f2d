// Honest low-precision candidate for ddp, zero1 and zero2 (kernels_suite_test):
// what a PyTorch bf16 user's step computes: f32 math in other loop orders than
// the oracle, every activation and gradient element rounded to the dtype, the
// ranks' gradients summed in reverse rank order with a rounding to the dtype
// after each addition (a bf16 ring), the Adam state rounded as it goes. Must be
// OK: the problems' tolerance and input ranges are built for it (a tolerance
// of base*k/100 failed it on exp_avg elements near zero).
#include <math.h>
#include <stdlib.h>
#include <vector>

#include "pkforge/candidate.h"
#include "kernels/problems/common/host_math.h"
static float rd(pkf_dtype dt, float v) { uint16_t b[2]; pkf_store(b, dt, 0, v); return pkf_load(b, dt, 0); }
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out, int32_t, void*) {
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int W = ctx->world_size;
  const int64_t B = in[0].shape[0], din = in[0].shape[1], dout = in[1].shape[1], P = out[0].shape[0];
  const int64_t H = (P - dout) / (din + 1 + dout), part = out[1].shape[0];
  const bool sh = part != P;
  std::vector<float> w(P), gsum(P, 0.f);
  int64_t at = 0; const int64_t n[4] = {H * din, H, dout * H, dout};
  for (int t = 0; t < 4; ++t) for (int64_t i = 0; i < n[t]; ++i) w[at++] = pkf_load(peer[0][2 + t], dt, i);
  float *W1 = w.data(), *b1 = W1 + H * din, *W2 = b1 + H, *b2 = W2 + dout * H;
  for (int j = W - 1; j >= 0; --j) {  // reverse rank order
    std::vector<float> h(B * H), e(B * dout), d(B * H), g(P, 0.f);
    for (int64_t r = 0; r < B; ++r) for (int64_t k = 0; k < H; ++k) {
      float s = 0; for (int64_t c = din - 1; c >= 0; --c) s += pkf_load(peer[j][0], dt, r * din + c) * W1[k * din + c];
      s += b1[k]; h[r * H + k] = rd(dt, s > 0 ? s : 0); }
    for (int64_t r = 0; r < B; ++r) for (int64_t o = 0; o < dout; ++o) {
      float s = 0; for (int64_t k = H - 1; k >= 0; --k) s += h[r * H + k] * W2[o * H + k];
      s = rd(dt, s + b2[o]); e[r * dout + o] = rd(dt, 2.f * (s - pkf_load(peer[j][1], dt, r * dout + o)) / (float)(B * dout)); }
    for (int64_t r = 0; r < B; ++r) for (int64_t k = 0; k < H; ++k) {
      float s = 0; if (h[r * H + k] > 0) for (int64_t o = 0; o < dout; ++o) s += e[r * dout + o] * W2[o * H + k];
      d[r * H + k] = rd(dt, s); }
    float *g1 = g.data(), *gb1 = g1 + H * din, *g2 = gb1 + H, *gb2 = g2 + dout * H;
    for (int64_t r = B - 1; r >= 0; --r) {
      for (int64_t k = 0; k < H; ++k) { gb1[k] += d[r * H + k]; for (int64_t c = 0; c < din; ++c) g1[k * din + c] += d[r * H + k] * pkf_load(peer[j][0], dt, r * din + c); }
      for (int64_t o = 0; o < dout; ++o) { gb2[o] += e[r * dout + o]; for (int64_t k = 0; k < H; ++k) g2[o * H + k] += e[r * dout + o] * h[r * H + k]; }
    }
    for (int64_t i = 0; i < P; ++i) gsum[i] = rd(dt, gsum[i] + rd(dt, g[i]));
  }
  const float bc1 = 1 - powf(0.9f, 4), bc2 = 1 - powf(0.999f, 4);
  for (int64_t i = 0; i < P; ++i) {
    const int64_t s = sh ? i / part : 0, e = i - s * part;
    const float gi = rd(dt, gsum[i] / W);
    const float m = rd(dt, 0.9f * pkf_load(peer[s][6], dt, e) + 0.1f * gi);
    const float v = rd(dt, 0.999f * pkf_load(peer[s][7], dt, e) + 0.001f * gi * gi);
    pkf_store(out[0].data, dt, i, w[i] - 1e-3f * (m / bc1) / (sqrtf(v / bc2) + 1e-8f));
    if (!sh || s == ctx->rank) { pkf_store(out[1].data, dt, e, m); pkf_store(out[2].data, dt, e, v); }
  }
  return ctx->barrier(ctx);
}
