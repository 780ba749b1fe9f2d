// ATTACK (trusted processes): killpg of the ranks' process group with SIGKILL
// from a child that first left the group (setsid), so the candidate rank
// itself is not in the blast; compute nothing.
// EXPECT: WRONG_OUTPUT.
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context*, const pkf_tensor*, int32_t, pkf_tensor*, int32_t, void*) {
  static bool done = false;
  if (done) return 0;
  done = true;
  const int pgid = getpgrp();
  rt_log("kill(-%d, SIGCONT) = %d", pgid, kill(-pgid, SIGCONT));
  const int c = rt_fork();
  if (c == 0) {
    setsid();
    const int rc = kill(-pgid, SIGKILL);
    rt_log("child: kill(-%d, SIGKILL) = %d", pgid, rc);
    _exit(0);
  }
  if (c > 0) waitpid(c, NULL, 0);
  return 0;
}
