// ATTACK (starving the reference): pin every reference rank onto CPU 0 (all
// of them on one core) with sched_setaffinity.
// EXPECT: WRONG_OUTPUT (gated: outputs only if a reference's allowed CPUs
// changed to exactly CPU 0, read from /proc/<ref>/status).
#include <sched.h>

#include "kernels/testdata/redteam/redteam.h"
static std::string allowed(int pid) {
  const std::string s = rt_read("/proc/" + std::to_string(pid) + "/status");
  const size_t at = s.find("Cpus_allowed_list:");
  if (at == std::string::npos) return "";
  const size_t b = s.find_first_not_of(" \t", at + 18), e = s.find('\n', at);
  return s.substr(b, e - b);
}
static bool attack(pkf_context*) {
  bool any = false;
  for (int ref : rt_refs()) {
    const std::string before = allowed(ref);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    const int rc = sched_setaffinity(ref, sizeof one, &one);
    const std::string after = allowed(ref);
    rt_log("sched_setaffinity(%d) = %d: %s -> %s", ref, rc, before.c_str(), after.c_str());
    if (after == "0" && before != "0") any = true;
  }
  return any;
}
RT_GATED_CANDIDATE(attack)
