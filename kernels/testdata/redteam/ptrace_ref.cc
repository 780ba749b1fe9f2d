// ATTACK (trusted processes): PTRACE_SEIZE every reference rank and the judge
// (then read/write their memory and registers at will).
// EXPECT: WRONG_OUTPUT (gated: outputs only if a seize succeeded).
#include <sys/ptrace.h>

#include "kernels/testdata/redteam/redteam.h"
static bool attack(pkf_context*) {
  std::vector<int> targets = rt_refs();
  targets.push_back(getppid());
  bool any = false;
  for (int pid : targets) {
    const long rc = ptrace(PTRACE_SEIZE, pid, NULL, NULL);
    rt_log("PTRACE_SEIZE %d = %ld", pid, rc);
    if (rc == 0) {
      any = true;
      ptrace(PTRACE_DETACH, pid, NULL, NULL);
    }
  }
  return any;
}
RT_GATED_CANDIDATE(attack)
