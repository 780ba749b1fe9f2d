// ATTACK (starving the reference): SCHED_IDLE for every reference rank (it
// then runs only when nothing else wants the CPU).
// EXPECT: WRONG_OUTPUT (gated: outputs only if a reference's policy, field 41
// of /proc/<ref>/stat, became SCHED_IDLE = 5).
#include <sched.h>

#include "kernels/testdata/redteam/redteam.h"
static bool attack(pkf_context*) {
  bool any = false;
  for (int ref : rt_refs()) {
    struct sched_param sp = {};
    const int rc = sched_setscheduler(ref, SCHED_IDLE, &sp);
    const std::string pol = rt_stat_field(ref, 41);
    rt_log("sched_setscheduler(%d, SCHED_IDLE) = %d, policy now %s", ref, rc, pol.c_str());
    if (pol == "5") any = true;
  }
  return any;
}
RT_GATED_CANDIDATE(attack)
