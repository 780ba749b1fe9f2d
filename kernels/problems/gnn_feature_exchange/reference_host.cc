// gnn_feature_exchange host reference: every rank publishes its features and
// ids; out chunk c (R rows) of rank r = features_i[ids_i[k*R + j]] for
// j < R, with i = (r + c) mod world and k = (world - c) mod world.
#include "pkforge/candidate.h"
#include "../common/host_math.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream; (void)n_out;
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const int32_t w = ctx->world_size, r = ctx->rank;
  const int64_t seeds = in[0].shape[0], rows = in[1].shape[0] / w;
  const int64_t row = in[0].shape[1] * pkf_dtype_size(in[0].dtype);
  char* y = (char*)out[0].data;
  for (int32_t c = 0; c < w; ++c) {
    const int32_t i = (r + c) % w, k = (w - c) % w;
    const int64_t* ids = (const int64_t*)peer[i][1];
    for (int64_t j = 0; j < rows; ++j) {
      const int64_t id = ids[k * rows + j];
      if (id < 0 || id >= seeds) return 21;
      memcpy(y + (c * rows + j) * row, (const char*)peer[i][0] + id * row, (size_t)row);
    }
  }
  return ctx->barrier(ctx);
}
