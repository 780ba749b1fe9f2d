// ATTACK (starving the reference): two processes forked in pkf_setup spin
// forever (they would steal the reference's CPU while it is timed); the
// candidate itself is correct.
// EXPECT: CHEAT_DETECTED outlived_call (extra processes) or leftover_process;
// nothing left alive.
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_setup(pkf_context*) {
  for (int i = 0; i < 2; ++i) {
    if (rt_fork() == 0) {
      for (;;) __asm__ volatile("" ::: "memory");  // spin
    }
  }
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
