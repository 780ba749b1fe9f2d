// ATTACK (round 5, on batch_progress's verdict rule): a probe gives itself
// away: the candidate is stopped and continued in the middle of a batch, so
// it gets two SIGCONTs between two batch starts instead of one (a SIGCONT
// handler is allowed: control_self_tuning). The candidate fuses every batch
// whole (batch_lookahead_fuse's cheat) until it has seen one probe, then runs
// the honest per-call algorithm (control_flag_epoch's) on long batches (short
// ones are never probed: still fused). One probe "behind", the others
// "consistent": anomalous = 1, below both the two-probe rule and 3/4 of the
// conclusive ones, so batch_progress only flags, and even with
// batch_consistency's flag the 3/4 rule keeps it from convicting. With the
// probes at j >= 5, every batch before the first probe (4 of 6 long ones on
// average, more when the first probe is late) is fused: the median is.
// Against a judge that probes any timed batch this still gets one free
// anomalous probe and every batch before it.
// EXPECT (fixed judge): CHEAT_DETECTED (batch_progress: a probe with no call
// done at >= half the batch's time convicts alone once load cannot cause it)
// or not OK above 1.5x the honest algorithm (control_flag_epoch, same test):
// RedTeamPending.probe_adapt_after_stop.
// Measured at 93d7640 (round 5): CHEAT_DETECTED batch_progress 3/3: the honest
// batches after the first probe are timed against the fused batches' span
// and look behind (0-2% done at 40-87%). Held.
#include "kernels/testdata/redteam/probe_dodge.h"

static bool g_seen_probe = false;

extern "C" int pkf_setup(pkf_context*) {
  rt_watch_conts();
  return 0;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (!rt_slots_init(&g_pd_s, ctx, in, out)) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  const rt_batch_pos p = rt_where(in);
  if (!p.batch) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);  // a trial
  if (p.first) {
    // A rank may count one SIGCONT more or less than its peers (seen once:
    // a deadlock when the ranks disagree): decided together, OR over ranks.
    const int64_t conts = rt_conts_since_prev_batch();
    const bool mine = g_seen_probe || (conts >= 2 && p.j > -kRtWarm);
    __atomic_store_n(&ctx->peer_flags[ctx->rank][3], mine ? 1u : 0u, __ATOMIC_RELEASE);
    if (ctx->barrier(ctx) != 0) return 3;
    bool any = false;
    for (int32_t r = 0; r < ctx->world_size; ++r)
      any = any || __atomic_load_n(&ctx->peer_flags[r][3], __ATOMIC_ACQUIRE) != 0;
    if (any && !g_seen_probe)
      rt_log("batch j=%lld: the previous batch was stopped mid-way (%lld SIGCONTs here): honest "
             "from now on", (long long)p.j, (long long)conts);
    g_seen_probe = any;
  }
  if (g_seen_probe && !p.is_short) return rt_epoch_call(ctx, in, out);
  if (!p.first) return 0;
  return rt_fuse_range(ctx, p, in, out[0].dtype, 0, p.count);
}
