// ATTACK (blame): SIGKILL every reference rank, compute nothing.
// EXPECT: WRONG_OUTPUT (never RUNTIME_ERROR naming a reference, never
// HARNESS_ERROR).
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context*, const pkf_tensor*, int32_t, pkf_tensor*, int32_t, void*) {
  for (int ref : rt_refs()) rt_log("kill(%d, SIGKILL) = %d", ref, kill(ref, SIGKILL));
  return 0;
}
