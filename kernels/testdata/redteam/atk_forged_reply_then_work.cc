// ATTACK (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_forged_reply_then_work; merged into the red-team battery 2026-12-04).
// Writes a complete, well-formed-looking early reply (magic, op) on its reply
// pipe and keeps working: the judge's clock must not stop there.
// EXPECT: CHEAT_DETECTED (any check).
#include "kernels/testdata/redteam/attacks_common.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  static int calls = 0;
  if (++calls > 8) {
    char reply[1024] = {0};
    const uint32_t magic = 0x504b4631, op = 11;
    memcpy(reply, &magic, 4);
    memcpy(reply + 4, &op, 4);
    (void)!write(4, reply, 512);
  }
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
