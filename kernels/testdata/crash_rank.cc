// Crashes (SIGSEGV) on the last rank inside pkf_run; other ranks wait in the
// barrier. Expect RUNTIME_ERROR naming that rank.
#include <signal.h>

#include "wrap_allreduce.inc"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (ctx->rank == ctx->world_size - 1) raise(SIGSEGV);
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
