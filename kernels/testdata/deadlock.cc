// The last rank calls the barrier once more than its peers: it waits forever.
// Expect TIMEOUT in PHASE_CORRECTNESS with that rank stuck and deadlock set.
#include "wrap_allreduce.inc"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  if (ctx->rank == ctx->world_size - 1) ctx->barrier(ctx);
  return rc;
}
