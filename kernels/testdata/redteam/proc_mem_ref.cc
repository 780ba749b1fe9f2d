// ATTACK (trusted processes): open /proc/<ref>/mem of every reference rank
// (read the reference outputs and seeds) and its /proc/<ref>/maps.
// EXPECT: WRONG_OUTPUT (gated: outputs only if mem or maps opened).
#include "kernels/testdata/redteam/redteam.h"
static bool attack(pkf_context*) {
  bool any = false;
  for (int ref : rt_refs()) {
    int fd = open(("/proc/" + std::to_string(ref) + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      any = true;
      close(fd);
    }
    if (!rt_read("/proc/" + std::to_string(ref) + "/maps").empty()) any = true;
  }
  return any;
}
RT_GATED_CANDIDATE(attack)
