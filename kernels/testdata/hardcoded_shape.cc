// A candidate specialized for the prompt's shape only (issue #17 item 5): the
// allreduce of the tiny preset (M=3, N=37) with its shape compiled in and no
// general path, as a kernel tuned to the one shape it was shown would be.
// Correct at that shape; at any other it writes nothing, so an evaluation on
// hidden shapes must not be OK.
#include "pkforge/candidate.h"
#include "kernels/problems/common/host_math.h"

namespace {
constexpr int64_t kM = 3, kN = 37;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream; (void)n_out;
  const void* peer[64][8];
  int rc = pkf_publish_inputs(ctx, in, n_in, peer);
  if (rc != 0) return rc;
  if (out[0].shape[0] == kM && out[0].shape[1] == kN) {
    for (int64_t i = 0; i < kM * kN; ++i) {
      float s = 0.0f;
      for (int32_t j = 0; j < ctx->world_size; ++j) s += pkf_load(peer[j][0], out[0].dtype, i);
      pkf_store(out[0].data, out[0].dtype, i, s);
    }
  }
  return ctx->barrier(ctx);
}
