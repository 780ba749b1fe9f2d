// ATTACK (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_deep_setsid_chain; merged into the red-team battery 2026-12-04).
// A 25-level chain of setsid + double fork from pkf_setup; the last one
// sleeps (the old reaper killed one level per round for a fixed number of
// rounds).
// EXPECT: CHEAT_DETECTED outlived_call.
#include "kernels/testdata/redteam/attacks_common.h"

extern "C" int pkf_setup(pkf_context* ctx) {
  if (ctx->rank != 0) return 0;
  const pid_t first = fork();
  if (first == 0) {
    for (int depth = 0; depth < 25; ++depth) {
      const pid_t c = fork();
      if (c != 0) _exit(0);
      setsid();
      RecordPid(getpid());
    }
    for (;;) pause();
  }
  RecordPid(first);
  waitpid(first, nullptr, 0);
  usleep(20000);
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
