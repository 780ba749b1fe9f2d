// ATTACK (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_exit_in_call; merged into the red-team battery 2026-12-04).
// Rank 1 exits in the middle of the evaluation: the candidate's crash.
// EXPECT: RUNTIME_ERROR.
#include "kernels/testdata/redteam/attacks_common.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static int calls = 0;
  if (ctx->rank == 1 && ++calls == 4) _exit(0);
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
