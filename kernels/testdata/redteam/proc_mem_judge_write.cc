// ATTACK (trusted processes): open /proc/<judge>/mem read-write (rewrite the
// judge's timing samples or verdict in place).
// EXPECT: WRONG_OUTPUT (gated: outputs only if it opened).
#include "kernels/testdata/redteam/redteam.h"
static bool attack(pkf_context*) {
  int fd = open(("/proc/" + std::to_string(getppid()) + "/mem").c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  close(fd);
  return true;
}
RT_GATED_CANDIDATE(attack)
