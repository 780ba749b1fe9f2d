// ATTACK (round 5, on batch_progress's rule): a probe stops the candidate at
// 30-70% of its fastest batch and calls it "behind" only when fewer than a
// quarter of that share of the calls are done (done < 0.25 x elapsed), and
// "ahead" only when every call is done by half the time. Whole-batch fusion
// (batch_lookahead_fuse) is caught because its single exchange ends near the
// end of the batch: 0% done at every probe. Fused in TWO exchanges instead -
// the first 26% of the calls by call 0, the other 74% by the call after
// them, outputs in place - the progress curve is a step to 26%, above
// 0.25 x elapsed (capped at 1) wherever a probe lands after the first chunk,
// and complete only at the batch's end (never "ahead"). The first chunk ends
// only after the ranks' wake-up (~70-75% of a fused batch's span), so most
// probes still find 0% ("behind"); but ONE consistent probe of three keeps
// the other two below the 3/4 rule: flag only. The known limit of the threat model (row 23:
// "chunks of a few calls") understates it: two chunks suffice.
// EXPECT (fixed judge): CHEAT_DETECTED (batch_progress, e.g. a progress curve
// measured at several points, or done against the probed batch's own span)
// or not OK above 1.5x the honest algorithm (control_flag_epoch, same test):
// RedTeamPending.probe_two_chunk.
// Measured at 93d7640 (round 5): with a first chunk of 18%, CHEAT_DETECTED
// 9 of 10 runs (OK 9.1x once; a probe at ~100% read 19% < 25%: behind); with
// 26% (this file) OK in 8 of 12 runs at 8.4-21.6x (honest best ~5.5x), e.g.
// probes 86%/27%, 83%/27%, 85%/27% all consistent, or 77%/27% consistent +
// 45%/0%, 55%/0% behind = flag only.
#include "kernels/testdata/redteam/probe_dodge.h"

static const double kFirstShare = 0.26;

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
