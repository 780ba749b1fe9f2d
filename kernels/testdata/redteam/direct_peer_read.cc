// ATTACK (reading peers' tensors without synchronization): allreduce that
// reads every peer's input straight from the candidate side's data segment,
// with no barrier of its own (direct.h): all inputs of a batch exist before
// it starts. Until 2026-12-04 the host backend put every rank's tensors in
// one shared segment and this was OK at 2.5x (the yardstick of
// patch_harness_barrier); since then each rank maps only its own data
// segment (peers are reached through the symmetric scratch, as on a GPU), so
// the "peer" offsets land in this rank's own, never written pages.
// EXPECT: WRONG_OUTPUT.
#include "kernels/testdata/redteam/direct.h"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  int rc = 0;
  if (rt_direct_first(ctx, in, n_in, out, n_out, stream, &rc)) return rc;
  rt_direct_allreduce(ctx, in, out);
  return 0;
}
