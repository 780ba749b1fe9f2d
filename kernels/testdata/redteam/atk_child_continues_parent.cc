// ATTACK (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_child_continues_parent; merged into the red-team battery 2026-12-04).
// A child process keeps sending SIGCONT to its parent (the rank).
// EXPECT: CHEAT_DETECTED outlived_call / frozen_while_idle.
#include "kernels/testdata/redteam/attacks_common.h"

extern "C" int pkf_setup(pkf_context*) {
  const pid_t parent = getpid();
  const pid_t c = fork();
  if (c == 0) {
    for (;;) {
      kill(parent, SIGCONT);
      usleep(50);
    }
  }
  RecordPid(c);
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
