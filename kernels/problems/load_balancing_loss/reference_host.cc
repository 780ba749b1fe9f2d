// load_balancing_loss host reference. Per rank: softmax of each token's logits
// in f32; its TOPK experts by logit (largest first, the lower index on ties);
// c[k][e] = tokens whose k-th choice is e, psum[e] = f32 sum over tokens of
// p[t, e]; local = E * sum over k, e of (c[k][e] / M) * (psum[e] / M).
// loss = (sum over ranks of local) / world; tokens_per_expert[k][e] =
// (sum over ranks of c[k][e]) / (world * M). TOPK is out[1]'s first dim.
#include <math.h>
#include <string.h>

#include "pkforge/candidate.h"
#include "../common/host_math.h"

// Rank-local statistics of one rank's logits.
static float pkf_lbl_local(const void* logits, pkf_dtype dt, int64_t m_dim, int64_t e_dim, int64_t topk,
                           int64_t* count /* [topk][e_dim] */) {
  float psum[64];
  float p[64];
  memset(psum, 0, sizeof psum);
  for (int64_t i = 0; i < topk * e_dim; ++i) count[i] = 0;
  for (int64_t t = 0; t < m_dim; ++t) {
    float mx = -INFINITY;
    for (int64_t e = 0; e < e_dim; ++e) {
      p[e] = pkf_load(logits, dt, t * e_dim + e);
      if (p[e] > mx) mx = p[e];
    }
    unsigned char taken[64];
    memset(taken, 0, sizeof taken);
    for (int64_t k = 0; k < topk; ++k) {
      int64_t best = -1;
      for (int64_t e = 0; e < e_dim; ++e)
        if (!taken[e] && (best < 0 || p[e] > p[best])) best = e;
      taken[best] = 1;
      ++count[k * e_dim + best];
    }
    float z = 0.0f;
    for (int64_t e = 0; e < e_dim; ++e) {
      p[e] = expf(p[e] - mx);
      z += p[e];
    }
    for (int64_t e = 0; e < e_dim; ++e) psum[e] += p[e] / z;
  }
  float local = 0.0f;
  for (int64_t k = 0; k < topk; ++k)
    for (int64_t e = 0; e < e_dim; ++e)
      local += ((float)count[k * e_dim + e] / (float)m_dim) * (psum[e] / (float)m_dim);
  return local * (float)e_dim;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream; (void)n_out;
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t m_dim = in[0].shape[0], e_dim = in[0].shape[1], topk = out[1].shape[0];
  if (e_dim > 64 || topk > e_dim) return 21;
  int64_t total[64 * 64], count[64 * 64];
  for (int64_t i = 0; i < topk * e_dim; ++i) total[i] = 0;
  float loss = 0.0f;
  for (int32_t j = 0; j < ctx->world_size; ++j) {
    loss += pkf_lbl_local(peer[j][0], dt, m_dim, e_dim, topk, count);
    for (int64_t i = 0; i < topk * e_dim; ++i) total[i] += count[i];
  }
  pkf_store(out[0].data, dt, 0, loss / (float)ctx->world_size);
  for (int64_t i = 0; i < topk * e_dim; ++i)
    pkf_store(out[1].data, dt, i, (float)total[i] / ((float)ctx->world_size * (float)m_dim));
  return ctx->barrier(ctx);
}
