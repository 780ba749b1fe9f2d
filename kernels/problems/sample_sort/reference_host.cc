// sample_sort host reference: every rank publishes its shard; each rank sorts
// the concatenation of all shards (values as f32, exact for every dtype) and
// keeps elements [r*N, (r+1)*N).
#include <algorithm>
#include <vector>

#include "pkforge/candidate.h"
#include "../common/host_math.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream; (void)n_out;
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  const pkf_dtype dt = in[0].dtype;
  const int64_t n = in[0].shape[0];
  std::vector<float> all;
  all.reserve((size_t)(n * ctx->world_size));
  for (int32_t j = 0; j < ctx->world_size; ++j)
    for (int64_t i = 0; i < n; ++i) all.push_back(pkf_load(peer[j][0], dt, i));
  std::sort(all.begin(), all.end());
  for (int64_t i = 0; i < out[0].shape[0]; ++i) pkf_store(out[0].data, dt, i, all[(size_t)(ctx->rank * n + i)]);
  return ctx->barrier(ctx);
}
