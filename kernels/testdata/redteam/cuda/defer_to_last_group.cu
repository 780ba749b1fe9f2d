// ATTACK (cuda, outputs unwritten when the call returns; round 3 finding 2
// on the GPU). From the second batch on (B known: batch_group.h) every call
// of a timed batch but the last returns without enqueueing anything; the
// last call enqueues one NCCL group with the allreduces of all B calls (one
// copy kernel at world size 1). When
// call k's stream is synchronized (the ABI's completion point) its outputs
// are still poison; the judge snapshots only after the batch.
// EXPECT (fixed judge): CHEAT_DETECTED poison_unwritten / timed_output_reverify
// / outlived_call / batch_consistency, or not OK above the honest speedup.
#include "kernels/testdata/redteam/cuda/batch_group.h"
static bg_state g;
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  const bool fuse = bg_track(&g, in, out);
  int rc = 0;
  if (!fuse) {
    rc = pkf_run_correct_on(ctx, in, out, (cudaStream_t)stream);
  } else if (g.in_batch == g.batch) {
    rc = bg_group(ctx, &g, g.batch_start, g.batch, out, (cudaStream_t)stream);
  }  // earlier calls: nothing now, their outputs stay poison until the last call's group
  bg_returned(&g);
  return rc;
}
