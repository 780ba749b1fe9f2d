// Red team round 24 (helper-redteam24, session 18, against 5b049fc: the
// world-1 wait attribution of batch_progress, AttributeProbeWait's
// `single_host_rank` and StarvedAlthoughReferenceWasNot).
//
// What the attacker read: at world size 1 on the host a probe is "starved"
// (inconclusive) when the rank's main thread waited for a CPU for over
// kStarvedShare more of the window than its least wait in a timed batch and
// the candidate's OTHER threads ran for under half that wait
// (own_threads_idle), and it stays starved even when the reference beside it
// did not wait. "Other threads' CPU" is CandidateWindow::OtherCpuNs =
// RanksCpuNs delta - main delta, RanksCpuNs = max(live threads' schedstat,
// /proc/<pid>/stat utime+stime). A thread that EXITED before the stop is in
// no live thread's schedstat, and stat counts it in clock ticks (10 ms):
// ~40 us of it is almost never seen (round 8 drip_starve_tick's hole, now
// in the probe's attribution). Forks are refused (r24_starve_child_fuse).
//
// So: whole-batch fusion (drip_aware_fuse, honest on drip batches); on
// every full-length batch but the first R24_CLEAN ones (warm-up + the first
// timed batch, which can never be probed: its least_wait ~0 and its ~30 us
// span make the allowance 1.7x the span), call 0 starts a thread that spins
// PKFORGE_RT24_HOLD_US (default 40) on the rank's CPU and exits, the main
// thread yield-waiting behind it (run-queue wait), then fuses. Pauses land
// at 0.3-0.7 of the ~30 us min span (inconclusive: within the allowance) or
// the allowance later (59-71 us), after the thread is gone: wait ~0.6 of the
// window, other threads' CPU ~0: starved, kept so.
// PKFORGE_RT24_NOTHREAD=1: the control, the same hold spun by the main
// thread itself (no wait: the late probes should read behind).
// EXPECT (fixed judge): CHEAT_DETECTED batch_progress, or not OK above the
// honest naive candidate's speedup.
#include <thread>

#include "kernels/testdata/redteam/epoch_lookahead.h"
#include "kernels/testdata/redteam/probe_dodge.h"

#ifndef R24_CLEAN
#define R24_CLEAN 2
#endif

static const uint32_t kOpDripCmd = 19;
static int64_t g_full = 0;

static int64_t r24_hold_ns() {
  static const int64_t ns = [] {
    const char* v = getenv("PKFORGE_RT24_HOLD_US");
    return (v != NULL && *v != '\0' ? (int64_t)atoll(v) : (int64_t)40) * 1000;
  }();
  return ns;
}

static void r24_hold() {
  static const bool nothread = getenv("PKFORGE_RT24_NOTHREAD") != NULL;
  const int64_t hold = r24_hold_ns();
  if (nothread) {
    const int64_t t0 = rt_now_ns();
    while (rt_now_ns() - t0 < hold) {
    }
    return;
  }
  volatile int done = 0;
  std::thread t([&] {
    const int64_t t0 = rt_now_ns();
    while (rt_now_ns() - t0 < hold) {
    }
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
  });
  while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) sched_yield();  // runnable behind it
  t.join();
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
  if (p.k != 0) return 0;  // written by the batch's first call
  if (p.count >= 64 && ++g_full > R24_CLEAN) r24_hold();
  return rt_fuse_range(ctx, p, in, out[0].dtype, 0, p.count);
}
