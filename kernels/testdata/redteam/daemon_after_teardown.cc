// ATTACK (containment): a correct candidate whose pkf_teardown double-forks a
// daemon (setsid, SIGHUP/SIGTERM ignored) that sleeps 120 s.
// EXPECT: CHEAT_DETECTED leftover_process; nothing left alive.
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
extern "C" void pkf_teardown(pkf_context*) {
  const int c = rt_fork();
  if (c == 0) {
    setsid();
    if (rt_fork() != 0) _exit(0);
    signal(SIGHUP, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    sleep(120);
    _exit(0);
  }
  if (c > 0) waitpid(c, NULL, 0);
}
