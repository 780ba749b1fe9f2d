// Host reference (oracle) shared by ddp, zero1 and zero2 (ParallelKernelBench
// 40-42): one data-parallel training step of the 2-layer MLP
// out = relu(X W1^T + b1) W2^T + b2 with loss mean((out - y)^2) per rank,
// gradients averaged over ranks, then one Adam step (lr 1e-3, betas 0.9 /
// 0.999, eps 1e-8, step 4) from the given optimizer state. The three problems
// compute the same values; they differ in how the state is held (ddp: the
// whole state on rank 0, broadcast; zero1/zero2: shard r of the flat state on
// rank r) and in the collectives a candidate would use.
//
// Inputs: X [B, din], y [B, dout], W1 [H, din], b1 [H], W2 [dout, H], b2 [dout]
// (the parameters on rank 0 only, empty elsewhere: PKB broadcasts rank 0's),
// exp_avg, exp_avg_sq (ddp: [P] on rank 0 only; zero: [P/world] per rank).
// Outputs: params [P] (W1|b1|W2|b2 flat, every rank), exp_avg', exp_avg_sq'
// (ddp: [P] every rank; zero: rank r's shard). Arithmetic in double, every
// output rounded once to the dtype. Every rank computes every rank's
// gradient from the published inputs (simple, not fast).
#ifndef PKFORGE_PROBLEMS_COMMON_MLP_ADAM_HOST_H_
#define PKFORGE_PROBLEMS_COMMON_MLP_ADAM_HOST_H_

#include <math.h>
#include <stdlib.h>

#include "pkforge/candidate.h"
#include "host_math.h"

#define PKF_MLP_ADAM_STEP 4

// Element i of the flat parameter vector W1|b1|W2|b2 (rank 0's tensors).
static double pkf_mlp_param(const void* const* t, pkf_dtype dt, int64_t h, int64_t din, int64_t dout,
                            int64_t i) {
  const int64_t n1 = h * din, n2 = n1 + h, n3 = n2 + dout * h;
  if (i < n1) return pkf_load(t[0], dt, i);
  if (i < n2) return pkf_load(t[1], dt, i - n1);
  if (i < n3) return pkf_load(t[2], dt, i - n2);
  return pkf_load(t[3], dt, i - n3);
}

// sharded = 0: ddp; 1: zero1 / zero2.
static int pkf_mlp_adam_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out, int sharded) {
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int world = ctx->world_size;
  const int64_t b = in[0].shape[0], din = in[0].shape[1], dout = in[1].shape[1];
  const int64_t p = out[0].shape[0], hid = (p - dout) / (din + 1 + dout);
  const int64_t part = sharded ? out[1].shape[0] : p;
  const void* par[4] = {peer[0][2], peer[0][3], peer[0][4], peer[0][5]};
  double* w = (double*)malloc(sizeof(double) * (size_t)p);
  double* g = (double*)calloc((size_t)p, sizeof(double));
  double* pre = (double*)malloc(sizeof(double) * (size_t)hid);
  double* dh = (double*)malloc(sizeof(double) * (size_t)hid);
  double* dout_v = (double*)malloc(sizeof(double) * (size_t)dout);
  if (!w || !g || !pre || !dh || !dout_v) return 90;
  for (int64_t i = 0; i < p; ++i) w[i] = pkf_mlp_param(par, dt, hid, din, dout, i);
  const double* w1 = w;
  const double* b1 = w + hid * din;
  const double* w2 = b1 + hid;
  const double* b2 = w2 + dout * hid;
  double* g1 = g;
  double* gb1 = g + hid * din;
  double* g2 = gb1 + hid;
  double* gb2 = g2 + dout * hid;
  // Per rank, per row: forward, then that row's contribution to the
  // gradient of the rank's mean loss; summed over ranks, divided by world.
  for (int j = 0; j < world; ++j)
    for (int64_t r = 0; r < b; ++r) {
      const void* x = peer[j][0];
      const void* y = peer[j][1];
      for (int64_t k = 0; k < hid; ++k) {
        double s = b1[k];
        for (int64_t c = 0; c < din; ++c) s += pkf_load(x, dt, r * din + c) * w1[k * din + c];
        pre[k] = s;
      }
      for (int64_t o = 0; o < dout; ++o) {
        double s = b2[o];
        for (int64_t k = 0; k < hid; ++k) s += (pre[k] > 0 ? pre[k] : 0.0) * w2[o * hid + k];
        dout_v[o] = 2.0 * (s - pkf_load(y, dt, r * dout + o)) / (double)(b * dout);
      }
      for (int64_t k = 0; k < hid; ++k) dh[k] = 0;
      for (int64_t o = 0; o < dout; ++o) {
        gb2[o] += dout_v[o];
        for (int64_t k = 0; k < hid; ++k) {
          g2[o * hid + k] += dout_v[o] * (pre[k] > 0 ? pre[k] : 0.0);
          dh[k] += dout_v[o] * w2[o * hid + k];
        }
      }
      for (int64_t k = 0; k < hid; ++k) {
        if (!(pre[k] > 0)) continue;
        gb1[k] += dh[k];
        for (int64_t c = 0; c < din; ++c) g1[k * din + c] += dh[k] * pkf_load(x, dt, r * din + c);
      }
    }
  const double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  const double bc1 = 1.0 - pow(beta1, PKF_MLP_ADAM_STEP), bc2 = 1.0 - pow(beta2, PKF_MLP_ADAM_STEP);
  for (int64_t i = 0; i < p; ++i) {
    const int64_t s = sharded ? i / part : 0, e = i - s * part;
    const double gi = g[i] / world;
    const double m = beta1 * pkf_load(peer[s][6], dt, e) + (1.0 - beta1) * gi;
    const double v = beta2 * pkf_load(peer[s][7], dt, e) + (1.0 - beta2) * gi * gi;
    pkf_store(out[0].data, dt, i, (float)(w[i] - lr * (m / bc1) / (sqrt(v / bc2) + eps)));
    if (!sharded || s == ctx->rank) {
      pkf_store(out[1].data, dt, e, (float)m);
      pkf_store(out[2].data, dt, e, (float)v);
    }
  }
  free(w);
  free(g);
  free(pre);
  free(dh);
  free(dout_v);
  return ctx->barrier(ctx);
}

#endif  // PKFORGE_PROBLEMS_COMMON_MLP_ADAM_HOST_H_
