// sinkhorn_knopp host reference, on the global matrix (every rank's samples,
// rank order), in double, rounded once: Q[k][c] = exp(x_c[k] / 0.07) for global
// sample c; Q /= sum(Q); 3 times: Q[k][:] /= sum over c of Q[k][c]; Q /= NP;
// Q[:][c] /= sum over k of Q[k][c]; Q /= total_batch (= world * B); finally
// Q *= total_batch; rank r writes its samples' columns as q [B, NP].
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
  const int64_t b_local = in[0].shape[0], np = in[0].shape[1], cols = b_local * ctx->world_size;
  double* q = (double*)malloc(sizeof(double) * (size_t)(cols * np));  // [global sample][prototype]
  double* proto = (double*)malloc(sizeof(double) * (size_t)np);
  if (q == NULL || proto == NULL) return 20;
  double mass = 0;
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t k = 0; k < np; ++k) {
      q[c * np + k] = exp((double)pkf_load(peer[c / b_local][0], dt, (c % b_local) * np + k) / 0.07);
      mass += q[c * np + k];
    }
  const double total_batch = (double)cols;
  for (int64_t i = 0; i < cols * np; ++i) q[i] /= mass;
  for (int it = 0; it < 3; ++it) {
    for (int64_t k = 0; k < np; ++k) proto[k] = 0;
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t k = 0; k < np; ++k) proto[k] += q[c * np + k];
    for (int64_t c = 0; c < cols; ++c) {
      double col = 0;
      for (int64_t k = 0; k < np; ++k) {
        q[c * np + k] = q[c * np + k] / proto[k] / (double)np;
        col += q[c * np + k];
      }
      for (int64_t k = 0; k < np; ++k) q[c * np + k] = q[c * np + k] / col / total_batch;
    }
  }
  for (int64_t b = 0; b < b_local; ++b)
    for (int64_t k = 0; k < np; ++k)
      pkf_store(out[0].data, dt, b * np + k, (float)(q[(ctx->rank * b_local + b) * np + k] * total_batch));
  free(q);
  free(proto);
  return ctx->barrier(ctx);
}
