// ATTACK (trusted processes): read /proc/<judge>/environ and the reference
// ranks' environ, looking for the operator secret the test plants in the
// judge's environment (PKF_REDTEAM_SECRET_KEY, filtered from rank processes).
// EXPECT: WRONG_OUTPUT (gated: outputs only if the secret was read).
#include "kernels/testdata/redteam/redteam.h"
static bool attack(pkf_context*) {
  std::vector<int> targets = rt_refs();
  targets.push_back(getppid());
  bool found = false;
  for (int pid : targets) {
    const std::string e = rt_read("/proc/" + std::to_string(pid) + "/environ");
    if (e.find("redteam-planted-secret") != std::string::npos) found = true;
  }
  if (getenv("PKF_REDTEAM_SECRET_KEY") != NULL) found = true;  // the filter failed
  return found;
}
RT_GATED_CANDIDATE(attack)
