// ATTACK (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_corrupt_own_control_block; merged into the red-team battery 2026-12-04).
// Scribbles over its own side's control block (fd 5: barrier counters), then
// waits in the barrier: its own ranks hang, the reference is unaffected.
// EXPECT: TIMEOUT, RUNTIME_ERROR, WRONG_OUTPUT or CHEAT_DETECTED; never HARNESS_ERROR.
#include "kernels/testdata/redteam/attacks_common.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static int calls = 0;
  if (ctx->rank == 0 && ++calls == 3) {
    void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, 5, 0);
    if (p != MAP_FAILED) memset(p, 0x7f, 4096);
  }
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
