// ATTACK (round 5, on batch_progress's rule): a probe stops the candidate at
// 30-70% of its fastest batch and calls it "behind" only when fewer than a
// quarter of that share of the calls are done (done < 0.25 x elapsed), and
// "ahead" only when every call is done by half the time. Whole-batch fusion
// (batch_lookahead_fuse) is caught because its single exchange ends near the
// end of the batch: 0% done at every probe. Fused in TWO exchanges instead -
// the first ~18% of the calls by call 0 (done by ~20-25% of the batch's
// time), the other 82% by the call after them, outputs in place - the
// progress curve is a step that is >= 18% from ~25% of the time on, above
// 0.25 x 70% = 17.5% everywhere a probe can land, and is complete only at the
// batch's end: every probe "consistent" (or "inconclusive"), at nearly the
// whole-batch fusion's speed. The known limit of the threat model (row 23:
// "chunks of a few calls") understates it: two chunks suffice.
// EXPECT (fixed judge): CHEAT_DETECTED (batch_progress, e.g. a progress curve
// measured at several points, or done against the probed batch's own span)
// or not OK above 1.5x the honest algorithm (control_flag_epoch, same test):
// RedTeamPending.probe_two_chunk.
// Measured at 93d7640 (round 5): CHEAT_DETECTED batch_progress 3/3: the first
// chunk ends only after the ~200 us wake-up, past 70% of a fused batch's span
// (0% done at 71-80%, 19% at 100-104%). Held.
#include "kernels/testdata/redteam/probe_dodge.h"

static const double kFirstShare = 0.18;

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (!rt_slots_init(&g_pd_s, ctx, in, out)) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  const rt_batch_pos p = rt_where(in);
  if (!p.batch) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);  // a trial
  const uint32_t c1 = std::max<uint32_t>(1, (uint32_t)(kFirstShare * p.count + 0.999));
  if (p.first && (p.j < 4 || p.j % 16 == 0))
    rt_log("batch j=%lld: %u calls fused as %u + %u", (long long)p.j, p.count, c1, p.count - c1);
  if (p.k == 0) return rt_fuse_range(ctx, p, in, out[0].dtype, 0, c1);
  if (p.k == c1) return rt_fuse_range(ctx, p, in, out[0].dtype, c1, p.count);
  return 0;  // written by the chunk's first call
}
