// ATTACK (round 6, batch_drip decided by the reference's free time): private
// look-ahead in chunks of 8 calls over the barrier-free epoch exchange
// (epoch_lookahead.h): a free-running call costs ~1/8 of an honest epoch call.
// Every output is written by its own call, nothing ahead (poison_at_start,
// batch_progress see an honest batch). On drip batches every call misses
// its cache (its inputs were decoys when the chunk was computed) and costs
// one exchange: the ~44 us drip floor of every barrier-free candidate on
// one shared CPU, so batch_drip's verdict follows the reference's free
// median, as for the honest control_flag_epoch.
// EXPECT (fixed judge): CHEAT_DETECTED batch_drip (or batch_progress /
// batch_consistency), or not OK at a speedup above the honest epoch's.
#include "kernels/testdata/redteam/epoch_lookahead.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  return rt_ep_lookahead_run(ctx, in, out, 8);
}
