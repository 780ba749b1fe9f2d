// ATTACK (trusted processes): prlimit on reference ranks (RLIMIT_CPU 1 s would
// kill the reference with SIGXCPU mid-evaluation; here the harmless
// RLIMIT_CORE is set to 12345 bytes to observe the effect).
// EXPECT: WRONG_OUTPUT (gated: outputs only if /proc/<ref>/limits changed).
#include <sys/resource.h>

#include "kernels/testdata/redteam/redteam.h"
static bool attack(pkf_context*) {
  bool any = false;
  for (int ref : rt_refs()) {
    struct rlimit lim = {12345, 12345};
    const int rc = prlimit(ref, RLIMIT_CORE, &lim, NULL);
    const std::string l = rt_read("/proc/" + std::to_string(ref) + "/limits");
    rt_log("prlimit(%d) = %d", ref, rc);
    if (l.find("12345") != std::string::npos) any = true;
  }
  return any;
}
RT_GATED_CANDIDATE(attack)
