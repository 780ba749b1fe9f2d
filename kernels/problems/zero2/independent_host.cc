// zero2, independent implementation (from prompt.md): common/mlp_adam_independent.h.
#include "pkforge/candidate.h"
#include "../common/mlp_adam_independent.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  (void)n_out; (void)stream;
  return ind_mlp_adam(ctx, in, n_in, out, /*sharded=*/1);
}
