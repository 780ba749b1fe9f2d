// ATTACK (round 8): drip_aware_epoch_k16's chunked private look-ahead (16
// calls per epoch exchange on free-running batches, honest on drip batches)
// plus drip_starve_child's spinner PROCESS during every drip batch: a forked
// child's CPU time is in no RanksCpuNs reading (judge.cc: live threads of
// the rank process, or /proc/<pid>/stat utime+stime; a child's goes to the
// parent's cutime only once reaped), so the ranks' main threads wait behind
// CPU "nobody used" -> foreign > 0.25 -> every drip batch inconclusive and
// batch_drip has nothing to say, whatever the free-running claim.
// EXPECT (fixed judge): CHEAT_DETECTED batch_drip (or batch_progress /
// batch_consistency), or not OK above 1.5x the honest epoch's speedup.
#include "kernels/testdata/redteam/drip_child.h"
#include "kernels/testdata/redteam/drip_common.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  if (!rt_slots_init(&g_ep_s, ctx, in, out)) return 9;
  const rt_drip_pos d = rt_drip_where(&g_ep_s, in);
  const bool drip = d.drip;
  if (drip) dc_start();
  const int rc = rt_ep_lookahead_run(ctx, in, out, 16, /*drip_aware=*/true);
  if (!drip) {
    dc_stop();  // never outlives a drip batch
    return rc;
  }
  dc_hold();
  if (d.k + 1 >= d.count) dc_stop();
  return rc;
}
