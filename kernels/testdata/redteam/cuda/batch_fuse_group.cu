// ATTACK (cuda, timing / check schedule: reading calls not yet made; round 3
// finding 1 on the GPU). Every input set of a timed batch is on the device
// before the batch starts and the judge looks at outputs only before and
// after the batch. From the second batch on (B known: batch_group.h), the
// first call of a batch enqueues ONE NCCL group with the allreduces of all
// B calls (one aggregated launch, one synchronization for the batch); the
// other B-1 calls enqueue nothing. (World size 1, the gpu test: one copy
// kernel for the batch, the allreduce of one rank.) Correct results; the reference pays a
// launch and a synchronization per call.
// EXPECT (fixed judge): not OK above the honest candidate's speedup
// (control_nccl_per_call in the same test), e.g. CHEAT_DETECTED
// poison_at_start / timed_output_reverify / batch_consistency.
#include "kernels/testdata/redteam/cuda/batch_group.h"
static bg_state g;
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  const bool fuse = bg_track(&g, in, out);
  int rc = 0;
  if (!fuse) {
    rc = pkf_run_correct_on(ctx, in, out, (cudaStream_t)stream);
  } else if (g.in_batch == 1) {
    rc = bg_group(ctx, &g, g.batch_start, g.batch, out, (cudaStream_t)stream);
  }  // later calls of the batch: already enqueued by its first call
  bg_returned(&g);
  return rc;
}
