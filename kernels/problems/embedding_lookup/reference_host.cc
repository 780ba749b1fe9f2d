// embedding_lookup host reference: every rank publishes its indices and its
// table shard; y row k = the k-th index after a stable partition by owner
// (owner = index / M), taken from the owner's shard at row index - owner*M.
#include "pkforge/candidate.h"
#include "../common/host_math.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream; (void)n_out;
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const int64_t* idx = (const int64_t*)in[0].data;
  const int64_t n_idx = in[0].shape[0], m = in[1].shape[0];
  const int64_t row = in[1].shape[1] * pkf_dtype_size(in[1].dtype);
  char* y = (char*)out[0].data;
  int64_t k = 0;
  for (int32_t j = 0; j < ctx->world_size; ++j)
    for (int64_t i = 0; i < n_idx; ++i)
      if (idx[i] / m == j) memcpy(y + row * k++, (const char*)peer[j][1] + (idx[i] - j * m) * row, (size_t)row);
  if (k != out[0].shape[0]) return 21;  // an index outside [0, world*M)
  return ctx->barrier(ctx);
}
