// ATTACK (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_fork_bomb_bounded; merged into the red-team battery 2026-12-04).
// 48 sleeping processes (a tree) from the first call of rank 0.
// EXPECT: CHEAT_DETECTED outlived_call.
#include "kernels/testdata/redteam/attacks_common.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static bool done = false;
  if (!done && ctx->rank == 0) {
    done = true;
    for (int i = 0; i < 48; ++i) {
      const pid_t c = fork();
      if (c == 0) {
        for (;;) pause();
      }
      RecordPid(c);
    }
  }
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
