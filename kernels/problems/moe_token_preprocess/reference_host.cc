// moe_token_preprocess host reference: every rank publishes its routing;
// each rank counts every rank's tokens per expert (counts[i][e]), then
// input_splits[j] = sum of my counts over rank j's experts, output_splits[i]
// = sum of rank i's counts over my experts, tokens_per_local_expert[i][l] =
// counts[i][r*EL + l], sum_tokens_per_local_expert[l] = its column sums.
#include "pkforge/candidate.h"
#include "../common/host_math.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream; (void)n_out;
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const int32_t w = ctx->world_size, r = ctx->rank;
  const int64_t n_sel = in[0].shape[0] * in[0].shape[1], el = out[3].shape[0], e = el * w;
  if (e > 4096) return 22;
  static int64_t counts[64][4096];
  for (int32_t i = 0; i < w; ++i) {
    for (int64_t x = 0; x < e; ++x) counts[i][x] = 0;
    const int64_t* sel = (const int64_t*)peer[i][0];
    for (int64_t k = 0; k < n_sel; ++k) {
      if (sel[k] < 0 || sel[k] >= e) return 21;
      ++counts[i][sel[k]];
    }
  }
  int64_t* in_splits = (int64_t*)out[0].data;
  int64_t* out_splits = (int64_t*)out[1].data;
  int64_t* per_local = (int64_t*)out[2].data;
  int64_t* sum_local = (int64_t*)out[3].data;
  for (int64_t l = 0; l < el; ++l) sum_local[l] = 0;
  for (int32_t j = 0; j < w; ++j) {
    in_splits[j] = 0;
    out_splits[j] = 0;
    for (int64_t l = 0; l < el; ++l) {
      in_splits[j] += counts[r][j * el + l];
      out_splits[j] += counts[j][r * el + l];
      per_local[j * el + l] = counts[j][r * el + l];
      sum_local[l] += counts[j][r * el + l];
    }
  }
  return ctx->barrier(ctx);
}
