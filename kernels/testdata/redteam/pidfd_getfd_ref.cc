// ATTACK (trusted processes): pidfd_open a reference rank and steal its
// segment descriptors with pidfd_getfd (fds 5..8).
// EXPECT: WRONG_OUTPUT (gated: outputs only if a descriptor was obtained).
#include "kernels/testdata/redteam/redteam.h"
static bool attack(pkf_context*) {
  bool any = false;
  for (int ref : rt_refs()) {
    const int pfd = (int)syscall(SYS_pidfd_open, ref, 0);
    rt_log("pidfd_open(%d) = %d", ref, pfd);
    if (pfd < 0) continue;
    for (int n = 5; n <= 8; ++n) {
      const int fd = (int)syscall(SYS_pidfd_getfd, pfd, n, 0);
      if (fd >= 0) {
        any = true;
        close(fd);
      }
    }
    close(pfd);
  }
  return any;
}
RT_GATED_CANDIDATE(attack)
