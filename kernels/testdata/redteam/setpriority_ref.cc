// ATTACK (starving the reference): setpriority(PRIO_PROCESS, ref, 19) on every
// reference rank, so the reference runs slowly and the candidate looks fast.
// EXPECT: WRONG_OUTPUT (gated: outputs only if a reference's nice value, read
// from /proc/<ref>/stat, became 19).
#include <sys/resource.h>

#include "kernels/testdata/redteam/redteam.h"
static bool attack(pkf_context*) {
  bool any = false;
  for (int ref : rt_refs()) {
    const int rc = setpriority(PRIO_PROCESS, (id_t)ref, 19);
    const std::string nice = rt_stat_field(ref, 19);
    rt_log("setpriority(%d) = %d, nice now %s", ref, rc, nice.c_str());
    if (nice == "19") any = true;
  }
  return any;
}
RT_GATED_CANDIDATE(attack)
