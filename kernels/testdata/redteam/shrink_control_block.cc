// ATTACK (blame): after a correct first call, rank 0 ftruncates its side's
// control block (fd 5, which the judge itself maps to read the deadlock
// diagnostics) to 0 bytes, and every rank then sleeps in its second call
// without touching the block: when the judge times the call out and reads
// the block, it dies of SIGBUS (no verdict at all), unless it is protected.
// EXPECT: TIMEOUT (or RUNTIME_ERROR of the candidate); never HARNESS_ERROR,
// never a missing result.
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static int calls = 0;
  if (++calls == 1) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  ctx->barrier(ctx);  // every rank is inside its call, out of the harness's barrier code
  usleep(20000);
  if (ctx->rank == 0) rt_log("ftruncate(5, 0) = %d", ftruncate(5, 0));
  sleep(60);
  return 0;
}
