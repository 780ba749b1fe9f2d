// load_balancing_loss, independent implementation (from prompt.md): per rank,
// rank the experts of each token by sorting indices (stable: ties keep the
// lower index first), softmax in double; then average over ranks.
#include <math.h>
#include <stdlib.h>

#include "pkforge/candidate.h"
#include "../common/independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  ind_inputs all[64];
  int rc = ind_share(ctx, in, n_in, all);
  if (rc != 0) return rc;
  const pkf_dtype dt = out[0].dtype;
  const int64_t tokens = in[0].shape[0], experts = in[0].shape[1], topk = out[1].shape[0];
  double* frac = (double*)calloc((size_t)(topk * experts), sizeof(double));
  double* prob_mean = (double*)calloc((size_t)experts, sizeof(double));
  double* logit = (double*)malloc(sizeof(double) * (size_t)experts);
  int64_t* order = (int64_t*)malloc(sizeof(int64_t) * (size_t)experts);
  if (!frac || !prob_mean || !logit || !order) return 31;
  double loss_sum = 0;
  for (int32_t r = 0; r < ctx->world_size; ++r) {
    double* rank_frac = (double*)calloc((size_t)(topk * experts), sizeof(double));
    for (int64_t e = 0; e < experts; ++e) prob_mean[e] = 0;
    for (int64_t t = 0; t < tokens; ++t) {
      double denom = 0;
      for (int64_t e = 0; e < experts; ++e) {
        logit[e] = ind_get(all[r].data[0], dt, t * experts + e);
        denom += exp(logit[e]);
      }
      for (int64_t e = 0; e < experts; ++e) prob_mean[e] += exp(logit[e]) / denom / (double)tokens;
      // insertion sort by descending logit; equal logits keep index order
      for (int64_t e = 0; e < experts; ++e) {
        int64_t pos = e;
        while (pos > 0 && logit[order[pos - 1]] < logit[e]) {
          order[pos] = order[pos - 1];
          --pos;
        }
        order[pos] = e;
      }
      for (int64_t k = 0; k < topk; ++k) rank_frac[k * experts + order[k]] += 1.0 / (double)tokens;
    }
    double local = 0;
    for (int64_t k = 0; k < topk; ++k)
      for (int64_t e = 0; e < experts; ++e) {
        local += rank_frac[k * experts + e] * prob_mean[e];
        frac[k * experts + e] += rank_frac[k * experts + e] / ctx->world_size;
      }
    loss_sum += local * (double)experts;
    free(rank_frac);
  }
  ind_put(out[0].data, dt, 0, loss_sum / ctx->world_size);
  for (int64_t i = 0; i < topk * experts; ++i) ind_put(out[1].data, dt, i, frac[i]);
  free(frac);
  free(prob_mean);
  free(logit);
  free(order);
  return ind_done(ctx);
}
