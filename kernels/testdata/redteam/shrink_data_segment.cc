// ATTACK (blame): ftruncate the candidate side's data segment (fd 7, which the
// reference ranks map to write inputs and read outputs) to 0 bytes, so a
// reference rank touching it dies with SIGBUS and the harness is blamed.
// Computes nothing.
// EXPECT: WRONG_OUTPUT (or RUNTIME_ERROR of the candidate); never
// HARNESS_ERROR.
#include "kernels/testdata/redteam/redteam.h"
extern "C" int pkf_run(pkf_context*, const pkf_tensor*, int32_t, pkf_tensor*, int32_t, void*) {
  static bool done = false;
  if (!done) {
    done = true;
    rt_log("ftruncate(7, 0) = %d", ftruncate(7, 0));
  }
  return 0;
}
