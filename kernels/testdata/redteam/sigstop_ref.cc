// ATTACK (trusted processes / blame): SIGSTOP every reference rank during the
// candidate's first call, and compute nothing: a stuck reference would turn
// the wrong answer into a TIMEOUT or HARNESS_ERROR blamed on the reference.
// EXPECT: WRONG_OUTPUT (signals only reach the candidate's own process).
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context*, const pkf_tensor*, int32_t, pkf_tensor*, int32_t, void*) {
  for (int ref : rt_refs()) rt_log("kill(%d, SIGSTOP) = %d", ref, kill(ref, SIGSTOP));
  return 0;
}
