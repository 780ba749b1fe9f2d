// ATTACK (trusted processes): SIGTERM then SIGKILL the judge (no verdict at
// all is the goal), compute nothing.
// EXPECT: WRONG_OUTPUT.
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context*, const pkf_tensor*, int32_t, pkf_tensor*, int32_t, void*) {
  rt_log("kill(judge, SIGTERM) = %d", kill(getppid(), SIGTERM));
  rt_log("kill(judge, SIGKILL) = %d", kill(getppid(), SIGKILL));
  return 0;
}
