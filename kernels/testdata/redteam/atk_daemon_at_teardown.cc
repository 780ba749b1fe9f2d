// ATTACK (from the former attack battery, testdata/attacks/attacks.cc
// -DATTACK_daemon_at_teardown; merged into the red-team battery 2026-12-04).
// Honest throughout, then leaves a daemon behind in pkf_teardown.
// EXPECT: CHEAT_DETECTED leftover_process.
#include "kernels/testdata/redteam/attacks_common.h"

extern "C" void pkf_teardown(pkf_context* ctx) {
  if (ctx->rank != 0) return;
  const pid_t c = fork();
  if (c == 0) {
    setsid();
    if (fork() != 0) _exit(0);
    RecordPid(getpid());
    signal(SIGTERM, SIG_IGN);
    for (;;) pause();
  }
  waitpid(c, nullptr, 0);
  usleep(20000);
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
