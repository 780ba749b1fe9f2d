// ATTACK (round 12, helper-redteam12, against 18269b0): count the progress
// probes, then fuse the batches no probe can land on any more.
// What the attacker read (judge_timing.cc Timing): exactly kProgressProbes
// (3) probes are drawn among batches 1..total-1 (total = batches + shorts +
// probes + drips: 14 for --iters 6), never on a short batch; extra probes
// come only after `total`. A probe is the one check that sees a fusion of a
// batch's calls (drip batches are told by the kOpDrip Cmd on the rank's
// stack and done honestly; short batches are never probed). A probe pauses
// the candidate mid-batch: SIGSTOP, then SIGCONT, which a handler here
// counts. Rank 0 counts long batches in which a SIGCONT arrived between its
// first and last call; from the RT_NEED-th on (2: the third probe is then
// likely behind already) it tells every rank (flag word 3, read at each
// batch's first call) to fuse long batches: one epoch exchange for
// RT_FUSE_K (32) calls, results kept privately and copied out call by call
// (epoch_lookahead.h). Before that: one exchange a call (RT_PRE_K 1,
// control_flag_epoch's algorithm). Short batches are always fused. Batches
// after index 13 (extra probes) are fused too (RT_TAIL_FUSE): the fused
// batches set the fastest span the extra probes pause against, and honest
// batches read "behind" against it (seen with RT_TAIL_FUSE 0).
// Measured 09:00-09:05 UTC (worker 18269b0, w3 tiny, generic command, 2-core
// host shared with other helpers), control_flag_epoch OK 5.1-8.1x in ~100
// launches in the same minutes: this (RT_NEED 2, RT_FUSE_K 32, tail fused)
// OK 13.76 / 14.14 / 14.34 / 11.36x in 4 of 28 launches, CHEAT 4 of 28
// (batch_progress, batch_consistency), OK 5.9-9.2x otherwise. Variants:
// RT_NEED 2, chunks of 48, tail honest: OK 13.96-14.69x in 4 of 38, CHEAT
// 15 of 38; RT_NEED 3: OK 16.58x once in 37, never caught. Statistical: a
// win needs the probes early (most official samples after them).
// Baseline for the counting (09:06, same host): RT_NEED 0 = every long batch
// in chunks of 32, drips honest, no counting (drip_aware_epoch_k16's residual
// at K 32): OK 10.7-21.2x in 16 of 20, CHEAT batch_progress 4 of 20. So the
// chunked residual alone forges ~2.5x most of the time; counting the probes
// (probe_gap_fuse.cc) trades wins for never being caught (0 of 48).
// EXPECT (fixed judge, e.g. a secret number of probes, or probes that cannot
// be counted): CHEAT_DETECTED, or OK below 1.5x the honest epoch's speedup.
#include <signal.h>

#include "kernels/testdata/redteam/epoch_lookahead.h"

// The RT_NEED-th probe's batch index must be at most this for any fusion: later,
// too few official samples are left to move the median, and fused batches
// shrink the fastest span extra probes are paused against.
#ifndef RT_MAX_J3
#define RT_MAX_J3 13
#endif
// Calls per exchange in a fused batch: the short batches (a quarter of a
// long one) are one exchange each, so long ones in chunks of RT_FUSE_K keep
// batch_consistency's least-short / least-long ratio under its 2x flag
// (whole 128-call exchanges read 2.07-2.15x: flagged, conservative_time).
#ifndef RT_FUSE_K
#define RT_FUSE_K 32
#endif
// Probes to see before fusing (3 = every one drawn among the first 14), and
// whether batches after index 13 (extra probes) are fused too.
#ifndef RT_NEED
#define RT_NEED 2
#endif
#ifndef RT_TAIL_FUSE
#define RT_TAIL_FUSE 1
#endif
// How a probe is seen: 0, a SIGCONT (handler) between the batch's first and
// last call; 1 (probe_gap_fuse.cc), no signal handler: a call that returned
// over 250 us after the previous one (the freeze, the progress round and the
// thaw; an unpaused call here takes ~20 us).
#ifndef RT_DETECT_GAP
#define RT_DETECT_GAP 0
#endif
#ifndef RT_PRE_K
#define RT_PRE_K 1
#endif

static volatile sig_atomic_t g_pc_conts = 0;
static void rt_pc_on_cont(int) { g_pc_conts = g_pc_conts + 1; }
static bool g_pc_inited = false;
static int64_t g_pc_left = 0;      // calls left in the current batch
static int g_pc_batches = 0;       // timing-phase batches begun (warm-up included)
static uint32_t g_pc_long = 0;     // the long batch's count
static int g_pc_cont0 = 0;
static bool g_pc_is_long = false, g_pc_fuse = false;
static int g_pc_probes = 0, g_pc_j3 = 99;
static int64_t g_pc_last_ret = 0;
static bool g_pc_gap = false;

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  if (!g_pc_inited) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = rt_pc_on_cont;
    sa.sa_flags = SA_RESTART;
    if (!RT_DETECT_GAP) sigaction(SIGCONT, &sa, NULL);
    g_pc_inited = true;
  }
  if (!rt_slots_init(&g_ep_s, ctx, in, out)) return 9;
  const int64_t slot = rt_slot_of(&g_ep_s, in[0].data);
  if (slot >= g_ep_s.ring) return rt_ep_lookahead_run(ctx, in, out, 1, true);
  const volatile rt_cmd* cmd = rt_find_cmd(slot);
  if (cmd == NULL) return rt_ep_lookahead_run(ctx, in, out, 1, true);
  volatile uint32_t* f0 = ctx->peer_flags[0];
  if (g_pc_left == 0) {  // a batch begins
    g_pc_left = cmd->count;
    ++g_pc_batches;
    const bool drip = cmd->op == 19;
    if (!drip && cmd->count > g_pc_long) g_pc_long = cmd->count;
    g_pc_is_long = !drip && cmd->count == g_pc_long;
    g_pc_cont0 = g_pc_conts;
    g_pc_gap = false;
    const int j = g_pc_batches - 2;  // one warm-up batch
    // Short batches are never probed (judge_timing.cc: probes skip them):
    // fused always, so batch_consistency's least-short / least-long ratio
    // stays the reference's whether or not long batches are fused.
    g_pc_fuse = !drip && j >= 0 &&
                (!g_pc_is_long ||
                 ((j <= 13 || RT_TAIL_FUSE) &&
                  __atomic_load_n(&f0[3], __ATOMIC_ACQUIRE) >= RT_NEED));
    if (ctx->rank == 0 && (g_pc_fuse || g_pc_batches % 4 == 1))
      rt_log("batch %d (j %d) op %u count %u long %d probes %d fuse %d", g_pc_batches, j,
             cmd->op, cmd->count, (int)g_pc_is_long, g_pc_probes, (int)g_pc_fuse);
  }
  int K = RT_PRE_K;
  if (g_pc_fuse) {
    const int64_t stride = rt_align(g_ep_s.bytes, 64);
    const int64_t half = (int64_t)(ctx->scratch_bytes / 2) / 64 * 64;
    K = (int)std::max<int64_t>(1, std::min<int64_t>(RT_FUSE_K, half / stride));
  }
  const int rc = rt_ep_lookahead_run(ctx, in, out, K, true);
  const int64_t t = rt_ep_now_ns();
  if (g_pc_left < (int64_t)cmd->count && t - g_pc_last_ret > 250000) g_pc_gap = true;
  g_pc_last_ret = t;
  const bool paused = RT_DETECT_GAP ? g_pc_gap : g_pc_conts != g_pc_cont0;
  if (--g_pc_left == 0 && ctx->rank == 0 && g_pc_is_long && paused) {
    if (++g_pc_probes == RT_NEED) g_pc_j3 = g_pc_batches - 2;
    if (g_pc_j3 <= RT_MAX_J3) __atomic_store_n(&f0[3], (uint32_t)g_pc_probes, __ATOMIC_RELEASE);
    rt_log("paused batch %d: probes seen %d", g_pc_batches, g_pc_probes);
  }
  return rc;
}
