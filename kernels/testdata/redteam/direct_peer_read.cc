// CONTROL (benign, and the yardstick for patch_harness_barrier): allreduce
// reading every peer's input straight from the shared data segment, no
// barrier of its own (direct.h). Legitimate on the host backend (pipelining
// and peer reads inside the call are allowed); faster than the reference,
// which publishes into scratch and waits in two barriers per call.
// EXPECT: OK.
#include "kernels/testdata/redteam/direct.h"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  int rc = 0;
  if (rt_direct_first(ctx, in, n_in, out, n_out, stream, &rc)) return rc;
  rt_direct_allreduce(ctx, in, out);
  return 0;
}
