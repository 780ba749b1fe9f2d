// ATTACK (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_fork_per_call_left_running; merged into the red-team battery 2026-12-04).
// Starts a process at the 5th call that lives on (sleeps).
// EXPECT: CHEAT_DETECTED outlived_call.
#include "kernels/testdata/redteam/attacks_common.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static int calls = 0;
  if (++calls == 5) {
    const pid_t c = fork();
    if (c == 0) {
      for (;;) pause();
    }
    RecordPid(c);
  }
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
