// ATTACK (round 16, helper-redteam16, against e06553f; the idle gate of
// round 15): fuse whole batches but stay UNDER the gate. progress_probe.h
// kIdleExcuseLimit: the main_idle excuse (every probe inconclusive when the
// thread-group leader hardly ran) still holds for a candidate no more than
// 1.5x faster than the reference (checks.cc BatchProgress, judge_timing.cc
// probes_settled: median per call against the reference's). The leader is
// parked as in r15_parked_leader_fuse (pkf_setup swapcontext; a runner
// thread runs the harness's loop), so every probe reads main_idle; every
// timed batch is fused whole by its first call (drip batches honest, one
// epoch exchange a call), and the batch's last call sleeps until
// batch start + count x target (sleeping: world 3 shares 2 CPUs, spinning
// ranks slowed each other to 1.05x), target = the reference's per-call time /
// RT16_CAP. The reference's time is estimated from the candidate's own
// naive calls (pkf_run_correct is the reference's algorithm: control_naive
// reads 0.97-1.00x): the warm-up batch (j < 0) runs naive, timed per call
// (trial calls were too noisy: 33-53 us for a 35 us reference). So the candidate claims ~1.4x
// for the naive algorithm's work done once a batch, and batch_progress is
// "not judged" (a pass, no flag) because it is under the gate; ordinary
// fusion at 1.4x without the parked leader is convicted by its "ahead"
// probes (checks.cc: only candidates no faster than the reference, 1.0x,
// are merely flagged).
// EXPECT (fixed judge): not OK above ~1.2x control_naive's speedup in the
// same minutes (CHEAT_DETECTED batch_progress, or flagged and slower).
#include "kernels/testdata/redteam/epoch_lookahead.h"
#include "kernels/testdata/redteam/r15_parked_leader.h"
#include "kernels/testdata/redteam/probe_dodge.h"

// RT16_BEHIND 1: every call's outputs are copied out at the batch's last
// call (probes read "behind" instead of "ahead"): for a fix that stops
// excusing only "ahead" probes.
#ifndef RT16_BEHIND
#define RT16_BEHIND 0
#endif
#ifndef RT16_CAP
#define RT16_CAP 1.4
#endif

static const uint32_t kOpDripCmd = 19;
static double g_naive_us = 0;  // the fastest naive (trial) call
static int64_t g_t0 = 0;
static int64_t g_batches = 0;

extern "C" int pkf_setup(pkf_context* ctx) {
  rt15_park_leader(ctx->rank);
  return 0;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (!rt_slots_init(&g_pd_s, ctx, in, out) || !rt_slots_init(&g_ep_s, ctx, in, out))
    return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  const int64_t slot = rt_slot_of(&g_pd_s, in[0].data);
  const volatile rt_cmd* cmd = rt_find_cmd(slot);
  if (cmd != NULL && cmd->op == kOpDripCmd && slot < g_pd_s.ring) {
    const std::vector<int64_t> one{slot};
    return rt_ep_exchange(ctx, &g_ep_s, one, out[0].dtype, {(char*)out[0].data});
  }
  const rt_batch_pos p = rt_where(in);
  if (!p.batch) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);  // a trial
  if (p.j < 0) {  // the warm-up batch: the naive algorithm, timed call 0 to the last
    if (p.k == 0) g_t0 = rt_now_ns();
    const int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
    if (p.k + 1 == p.count) {
      const double us = (rt_now_ns() - g_t0) / 1e3 / (double)p.count;
      if (g_naive_us <= 0 || us < g_naive_us) g_naive_us = us;
    }
    return rc;
  }
  if (p.k == 0) g_t0 = rt_now_ns();
  if (RT16_BEHIND && p.k + 1 == p.count) {  // sleep first: 0% done until ~90% of the target
    prctl(PR_SET_TIMERSLACK, 1UL);
    const int64_t left =
        g_t0 + (int64_t)(0.9e3 * (double)p.count * g_naive_us / RT16_CAP) - rt_now_ns();
    if (left > 0) {
      const timespec ts{(time_t)(left / 1000000000), (long)(left % 1000000000)};
      nanosleep(&ts, nullptr);
    }
  }
  if (p.k == (RT16_BEHIND ? p.count - 1 : 0)) {
    const int rc = rt_fuse_range(ctx, p, in, out[0].dtype, 0, p.count);
    if (rc != 0) return rc;
    if (++g_batches % 16 == 1)
      rt_log("rank %d: batch of %lld fused (%lld so far), naive %.1f us, target %.1f us a call",
             ctx->rank, (long long)p.count, (long long)g_batches, g_naive_us,
             g_naive_us / RT16_CAP);
  }
  if (p.k + 1 == p.count) {  // the batch's last call: sleep until its target end
    prctl(PR_SET_TIMERSLACK, 1UL);
    const int64_t until = g_t0 + (int64_t)(1e3 * (double)p.count * g_naive_us / RT16_CAP);
    const int64_t left = until - rt_now_ns();
    if (left > 0) {
      const timespec ts{(time_t)(left / 1000000000), (long)(left % 1000000000)};
      nanosleep(&ts, nullptr);
    }
  }
  return 0;
}
