// ddp host reference (the oracle): common/mlp_adam_host.h, which computes
// the step in double from every rank's published inputs.
#include "pkforge/candidate.h"
#include "../common/mlp_adam_host.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)stream; (void)n_out;
  return pkf_mlp_adam_run(ctx, in, n_in, out, /*sharded=*/0 != 0);
}
