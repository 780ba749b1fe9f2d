// ATTACK (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_garbage_on_reply_channel; merged into the red-team battery 2026-12-04).
// Writes bytes of its own on the rank's reply pipe (fd 4) during a call.
// EXPECT: CHEAT_DETECTED result_channel.
#include "kernels/testdata/redteam/attacks_common.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static int calls = 0;
  if (++calls == 3) {
    char junk[64];
    memset(junk, 0x5a, sizeof junk);
    (void)!write(4, junk, sizeof junk);
  }
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
