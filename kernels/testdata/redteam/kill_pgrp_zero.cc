// ATTACK (trusted processes): kill(0, SIGSTOP): stop the whole process group
// (every rank of both sides shares one), compute nothing.
// EXPECT: WRONG_OUTPUT.
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context*, const pkf_tensor*, int32_t, pkf_tensor*, int32_t, void*) {
  static bool done = false;
  if (!done) {
    done = true;
    rt_log("kill(0, SIGSTOP) = %d", kill(0, SIGSTOP));
  }
  return 0;
}
