// Independent implementation shared by ddp, zero1 and zero2 (written from
// their prompt.md, not from the oracle): whole-matrix passes per rank (hidden
// activations of every row, then the output error of every row, then each
// gradient as one matrix product), double arithmetic, the independent.h
// exchange and rounding. Bias corrections with repeated multiplication.
#ifndef PKFORGE_PROBLEMS_COMMON_MLP_ADAM_INDEPENDENT_H_
#define PKFORGE_PROBLEMS_COMMON_MLP_ADAM_INDEPENDENT_H_

#include <math.h>
#include <stdlib.h>

#include "independent.h"

static int ind_mlp_adam(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out, int sharded) {
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t rows = in[0].shape[0], din = in[0].shape[1], dout = in[1].shape[1];
  const int64_t total = out[0].shape[0];
  const int64_t hid = (total - dout) / (din + dout + 1);
  const int64_t shard = out[1].shape[0];
  // Rank 0's parameters, as separate matrices.
  double* W1 = (double*)malloc(sizeof(double) * hid * din);
  double* B1 = (double*)malloc(sizeof(double) * hid);
  double* W2 = (double*)malloc(sizeof(double) * dout * hid);
  double* B2 = (double*)malloc(sizeof(double) * dout);
  double* G = (double*)calloc(total, sizeof(double));  // summed over ranks, W1|b1|W2|b2
  double* Hm = (double*)malloc(sizeof(double) * rows * hid);
  double* E = (double*)malloc(sizeof(double) * rows * dout);
  double* D = (double*)malloc(sizeof(double) * rows * hid);
  if (!W1 || !B1 || !W2 || !B2 || !G || !Hm || !E || !D) return 15;
  for (int64_t i = 0; i < hid * din; ++i) W1[i] = ind_get(all[0].data[2], dt, i);
  for (int64_t i = 0; i < hid; ++i) B1[i] = ind_get(all[0].data[3], dt, i);
  for (int64_t i = 0; i < dout * hid; ++i) W2[i] = ind_get(all[0].data[4], dt, i);
  for (int64_t i = 0; i < dout; ++i) B2[i] = ind_get(all[0].data[5], dt, i);
  double* gW1 = G;
  double* gB1 = G + hid * din;
  double* gW2 = gB1 + hid;
  double* gB2 = gW2 + dout * hid;
  for (int src = 0; src < ctx->world_size; ++src) {
    const void* X = all[src].data[0];
    const void* Y = all[src].data[1];
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < hid; ++j) {
        double z = 0;
        for (int64_t c = 0; c < din; ++c) z += W1[j * din + c] * ind_get(X, dt, r * din + c);
        z += B1[j];
        Hm[r * hid + j] = z > 0 ? z : 0;
      }
    // d loss / d out for loss = sum((out - y)^2) / (rows * dout).
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < dout; ++o) {
        double z = B2[o];
        for (int64_t j = 0; j < hid; ++j) z += W2[o * hid + j] * Hm[r * hid + j];
        E[r * dout + o] = (z - ind_get(Y, dt, r * dout + o)) * 2 / (double)(rows * dout);
      }
    // d loss / d pre-activation (zero where the ReLU is inactive).
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < hid; ++j) {
        double z = 0;
        if (Hm[r * hid + j] > 0)
          for (int64_t o = 0; o < dout; ++o) z += E[r * dout + o] * W2[o * hid + j];
        D[r * hid + j] = z;
      }
    for (int64_t o = 0; o < dout; ++o) {
      for (int64_t j = 0; j < hid; ++j) {
        double z = 0;
        for (int64_t r = 0; r < rows; ++r) z += E[r * dout + o] * Hm[r * hid + j];
        gW2[o * hid + j] += z;
      }
      double z = 0;
      for (int64_t r = 0; r < rows; ++r) z += E[r * dout + o];
      gB2[o] += z;
    }
    for (int64_t j = 0; j < hid; ++j) {
      for (int64_t c = 0; c < din; ++c) {
        double z = 0;
        for (int64_t r = 0; r < rows; ++r) z += D[r * hid + j] * ind_get(X, dt, r * din + c);
        gW1[j * din + c] += z;
      }
      double z = 0;
      for (int64_t r = 0; r < rows; ++r) z += D[r * hid + j];
      gB1[j] += z;
    }
  }
  double p1 = 1, p2 = 1;
  for (int t = 0; t < 4; ++t) {
    p1 *= 0.9;
    p2 *= 0.999;
  }
  for (int64_t i = 0; i < total; ++i) {
    const int owner = sharded ? (int)(i / shard) : 0;
    const int64_t at = sharded ? i % shard : i;
    const double g = G[i] / ctx->world_size;
    const double m = 0.9 * ind_get(all[owner].data[6], dt, at) + 0.1 * g;
    const double v = 0.999 * ind_get(all[owner].data[7], dt, at) + 0.001 * g * g;
    const double update = 1e-3 * (m / (1 - p1)) / (sqrt(v / (1 - p2)) + 1e-8);
    const int64_t n1 = hid * din, n2 = n1 + hid, n3 = n2 + dout * hid;
    const double w = i < n1 ? W1[i] : i < n2 ? B1[i - n1] : i < n3 ? W2[i - n2] : B2[i - n3];
    ind_put(out[0].data, dt, i, w - update);
    if (!sharded || owner == ctx->rank) {
      ind_put(out[1].data, dt, at, m);
      ind_put(out[2].data, dt, at, v);
    }
  }
  free(W1); free(B1); free(W2); free(B2); free(G); free(Hm); free(E); free(D);
  return ind_done(ctx);
}

#endif  // PKFORGE_PROBLEMS_COMMON_MLP_ADAM_INDEPENDENT_H_
