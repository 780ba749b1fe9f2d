// ATTACK (round 5, on batch_progress's schedule): the progress probes are
// drawn only among timed batches j >= kProbeAfter + kShortBatches = 5 (judge.cc
// Timing), never on a short batch, and the made-up ones come after the last
// timed batch. With --iters 6 there are 6 long timed batches among j = 0..10,
// of which 3-5 (4 on average) lie in j = 0..4: never probed. The candidate
// counts batches (the harness's Cmd on the rank's stack, chunk_lookahead.h)
// and fuses every batch the judge cannot probe (warm-up, j < 5, short ones:
// one exchange for the whole batch, outputs in place, batch_lookahead_fuse's
// cheat) and runs the honest barrier-free per-call algorithm
// (control_flag_epoch's, 5-6x) on every long batch from j = 5 on. Probes find
// honest progress: the honest algorithm is within 4x of the fused one, so
// even at 30-70% of the FUSED fastest span it has done more than a quarter
// of the share. The official time is the median of 6 long batches: the
// fused one whenever 4 or 5 of them lie in j < 5 (about 80% of runs).
// EXPECT (fixed judge): CHEAT_DETECTED (batch_progress: probes on any timed
// batch, or the probed batches' own speed against the others') or not OK
// above 1.5x the honest algorithm (control_flag_epoch, same test):
// RedTeamPending.probe_window_dodge.
// Measured at 93d7640 (round 5): CHEAT_DETECTED batch_progress 3/3 (0-2% of the
// calls done at 34-100%): the probes are timed against the FUSED batches' span,
// mostly wake-up, so the honest batches after them look behind. Held.
#include "kernels/testdata/redteam/probe_dodge.h"

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (!rt_slots_init(&g_pd_s, ctx, in, out)) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  const rt_batch_pos p = rt_where(in);
  if (!p.batch) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);  // a trial
  const bool probeable = p.j >= kRtFirstProbe && !p.is_short;
  if (p.first && (p.j < 12 || p.j % 16 == 0))
    rt_log("batch j=%lld: %u calls, %s", (long long)p.j, p.count,
           probeable ? "honest (may be probed)" : "fused whole (never probed)");
  static int64_t t_first = 0;
  if (p.first) t_first = rt_now_ns();
  if (p.last && ctx->rank == 0 && p.j < 12)
    rt_log("batch j=%lld: first call to last call %.0f us", (long long)p.j, (rt_now_ns() - t_first) / 1e3);
  if (probeable) return rt_epoch_call(ctx, in, out);
  if (!p.first) return 0;  // written by the batch's first call
  return rt_fuse_range(ctx, p, in, out[0].dtype, 0, p.count);
}
