// ATTACK (round 6, batch_drip decided by the reference's free time, drip
// batches detected): drip_chunk_epoch_k8 with chunks of 16 calls, and
// honest (one epoch exchange per call, no look-ahead) on drip batches,
// which it tells by the harness's command on the rank's stack (kOpDrip;
// a first version used the gap before a call and deadlocked at de5d894).
// Its drip calls then cost what
// control_flag_epoch's do (~44 us), so batch_drip judges it exactly as
// the honest control (consistent while the reference's free median is
// below ~40 us) while its free-running calls cost ~1/16 of an exchange.
// EXPECT (fixed judge): CHEAT_DETECTED batch_drip (or batch_progress /
// batch_consistency), or not OK at a speedup above the honest epoch's.
#include "kernels/testdata/redteam/epoch_lookahead.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  return rt_ep_lookahead_run(ctx, in, out, 16, /*drip_aware=*/true);
}
