// ATTACK (containment): a correct candidate whose pkf_teardown leaves a
// moving target: a process that ignores every catchable signal, clears its
// parent-death signal, and every 2 ms forks a successor and exits (a new pid
// each time), for 120 s.
// EXPECT: CHEAT_DETECTED leftover_process; nothing left alive.
#include <sys/prctl.h>

#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
}
extern "C" void pkf_teardown(pkf_context*) {
  if (rt_fork() != 0) return;
  setsid();
  for (int s = 1; s < 32; ++s)
    if (s != SIGKILL && s != SIGSTOP) signal(s, SIG_IGN);
  const int64_t end = rt_now_ns() + 120000000000ll;
  while (rt_now_ns() < end) {
    prctl(PR_SET_PDEATHSIG, 0);
    usleep(2000);
    const int c = rt_fork();
    if (c != 0) _exit(0);  // the successor carries on
  }
  _exit(0);
}
