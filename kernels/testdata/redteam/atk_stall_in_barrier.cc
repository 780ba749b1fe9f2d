// ATTACK (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_stall_in_barrier; merged into the red-team battery 2026-12-04).
// Rank 0 never calls the barrier after the warm-up: a deadlock of its own.
// EXPECT: TIMEOUT.
#include "kernels/testdata/redteam/attacks_common.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static int calls = 0;
  if (ctx->rank == 0 && ++calls > 4) {
    for (;;) pause();
  }
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
