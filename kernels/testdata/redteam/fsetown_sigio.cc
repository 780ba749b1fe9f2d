// ATTACK (trusted processes): deliver SIGKILL to reference ranks through SIGIO
// ownership: F_SETOWN of a pipe to the reference's pid, F_SETSIG SIGKILL,
// O_ASYNC, then make the pipe readable. Compute nothing.
// EXPECT: WRONG_OUTPUT.
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context*, const pkf_tensor*, int32_t, pkf_tensor*, int32_t, void*) {
  static bool done = false;
  if (done) return 0;
  done = true;
  for (int ref : rt_refs()) {
    int p[2];
    if (pipe(p) != 0) continue;
    const int a = fcntl(p[0], F_SETOWN, ref);
    const int b = fcntl(p[0], F_SETSIG, SIGKILL);
    const int c = fcntl(p[0], F_SETFL, O_ASYNC | O_NONBLOCK);
    ssize_t w = write(p[1], "x", 1);
    rt_log("ref %d: F_SETOWN %d F_SETSIG %d O_ASYNC %d write %zd", ref, a, b, c, w);
    (void)w;
  }
  return 0;
}
