// ATTACK (round 13, helper-redteam13, against the lead's timing_schedule
// working tree on ee94786): adaptive fusion on a probe budget. The schedule
// now probes every long batch after the first sample with the same secret
// chance p (1/2 at 6 samples), so probes cannot be counted to a safe end;
// but the candidate still sees each probe afterwards (a SIGCONT between a
// batch's first and last call), so it knows, after every long batch,
// whether that batch was probed, and whether it had fused it.
// What the attacker read (progress_probe.cc JudgeProgress, verdict.h
// OfficialCandidateTime, timing_schedule.cc):
// - a conviction needs b anomalous probes with (b >= 2 and 4b >= 3c) or
//   (b >= 4 and 3b >= 2c), c the conclusive ones: every anomalous probe is
//   "paid for" by half a consistent one (an honest batch that was probed);
// - one anomalous probe alone only flags, and a flag makes the official
//   time the 75th percentile instead of the median;
// - the first long timed batch is never probed (no span yet).
// Policy (rank 0 decides, flag word 3 of its pad tells every rank at each
// batch's first call): after every probed long batch count it bad (it was
// fused) or good (honest); fuse the next long batch exactly when one more
// bad probe, plus RT13_MARGIN (2) more (probes the judge found inconclusive
// are counted good here but are not), would still not convict
// (RT13_FIRST_FREE 1 also fuses the first long timed batch). In
// expectation a fuser then fuses 2/3 of its batches, under the 3/4 the 75th
// percentile needs; the attack lives on the variance of 6-8 samples (+ the
// extension): a run of honest batches that were probed buys several fused
// ones that were not. A simulation of the schedule and the rules (fused
// probes always behind, honest ones always consistent, 10% inconclusive)
// predicted ~20% of launches OK at the fused speed, ~5% convicted.
// Fusion (RT13_FUSE_K, 0 = the whole batch): one epoch exchange for the
// calls of a chunk, results kept privately and copied out call by call
// (epoch_lookahead.h); short batches always one exchange each (never
// probed; keeps batch_consistency's ratio near 1); drip batches honest
// (kOpDrip on the stack). Honest = one epoch exchange a call
// (control_flag_epoch's algorithm).
// RT13_ALWAYS 1: no budget, every long timed batch fused (r13_always_k32).
// MEASURED (helper-redteam13, 10:06-10:16 UTC, 2-core host, generic command,
// alternated with control_flag_epoch OK 5.1-9.7x): CHEAT_DETECTED
// batch_progress 42 of 62, OK 20 of 62 at 5.4-9.0x, never above 1.5x the
// honest epoch. The dilution is not what stops it: once any fused batch was
// a sample, the fastest span the probes are paused against is a fused one
// (2-3 us a call against the honest ~5), and the HONEST batches probed
// after it read "behind" (e.g. 2% done at 56%, 9% at 55%): typically 1-3 of
// the candidate's 3-6 "good" probes (honest batches, probed) were anomalous.
// A fuser can only mix in honest batches when its fusion is under ~2x.
// EXPECT (fixed judge): CHEAT_DETECTED, or OK below 1.5x the honest epoch's.
#include <signal.h>

#include "kernels/testdata/redteam/epoch_lookahead.h"

#ifndef RT13_FUSE_K
#define RT13_FUSE_K 0
#endif
#ifndef RT13_MARGIN
#define RT13_MARGIN 2
#endif
#ifndef RT13_FIRST_FREE
#define RT13_FIRST_FREE 0
#endif
#ifndef RT13_ALWAYS
#define RT13_ALWAYS 0
#endif

static volatile sig_atomic_t g_r13_conts = 0;
static void rt13_on_cont(int) { g_r13_conts = g_r13_conts + 1; }
static bool g_r13_inited = false;
static int64_t g_r13_left = 0;     // calls left in the current batch
static int g_r13_batches = 0;      // timing-phase batches begun (warm-up included)
static uint32_t g_r13_long = 0;    // the long batch's count
static int g_r13_cont0 = 0;
static bool g_r13_is_long = false, g_r13_fuse = false, g_r13_timed_long_seen = false;
static int g_r13_bad = 0, g_r13_good = 0, g_r13_fused_samples = 0, g_r13_honest_samples = 0;

static bool rt13_convicts(int b, int c) {
  return (b >= 2 && 4 * b >= 3 * c) || (b >= 4 && 3 * b >= 2 * c);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  if (!g_r13_inited) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = rt13_on_cont;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGCONT, &sa, NULL);
    g_r13_inited = true;
  }
  if (!rt_slots_init(&g_ep_s, ctx, in, out)) return 9;
  const int64_t slot = rt_slot_of(&g_ep_s, in[0].data);
  if (slot >= g_ep_s.ring) return rt_ep_lookahead_run(ctx, in, out, 1, true);
  const volatile rt_cmd* cmd = rt_find_cmd(slot);
  if (cmd == NULL) return rt_ep_lookahead_run(ctx, in, out, 1, true);
  volatile uint32_t* f0 = ctx->peer_flags[0];
  if (g_r13_left == 0) {  // a batch begins
    g_r13_left = cmd->count;
    ++g_r13_batches;
    const bool drip = cmd->op == 19;
    if (!drip && cmd->count > g_r13_long) g_r13_long = cmd->count;
    g_r13_is_long = !drip && cmd->count == g_r13_long;
    g_r13_cont0 = g_r13_conts;
    const bool warmup = g_r13_batches == 1;
    if (drip || warmup) {
      g_r13_fuse = false;
    } else if (!g_r13_is_long) {
      g_r13_fuse = true;  // short batches: never probed
    } else if (!g_r13_timed_long_seen) {
      g_r13_fuse = RT13_FIRST_FREE != 0;  // the first long timed batch: never probed
      g_r13_timed_long_seen = true;
    } else {
      // Rank 0's decision after the previous long batch: 2 = fuse, 1 = honest.
      g_r13_fuse = RT13_ALWAYS || __atomic_load_n(&f0[3], __ATOMIC_ACQUIRE) == 2;
    }
  }
  int K = 1;
  int rc = 0;
  if (!g_r13_fuse) {
    // Honest: one epoch exchange for this call alone, without the
    // look-ahead cache's bookkeeping (control_flag_epoch's cost).
    const std::vector<int64_t> one{slot};
    rc = rt_ep_exchange(ctx, &g_ep_s, one, out[0].dtype, {(char*)out[0].data});
  } else {
    const int64_t stride = rt_align(g_ep_s.bytes, 64);
    const int64_t half = (int64_t)(ctx->scratch_bytes / 2) / 64 * 64;
    const int64_t want = RT13_FUSE_K > 0 ? RT13_FUSE_K : (int64_t)cmd->count;
    K = (int)std::max<int64_t>(1, std::min<int64_t>(want, half / stride));
    rc = rt_ep_lookahead_run(ctx, in, out, K, true);
  }
  if (--g_r13_left == 0 && ctx->rank == 0 && g_r13_is_long && g_r13_batches > 1) {
    const bool paused = g_r13_conts != g_r13_cont0;
    if (paused) {
      if (g_r13_fuse) ++g_r13_bad;
      else ++g_r13_good;
    } else {
      if (g_r13_fuse) ++g_r13_fused_samples;
      else ++g_r13_honest_samples;
    }
    const int nb = g_r13_bad + 1 + RT13_MARGIN;
    const bool next = !rt13_convicts(nb, nb + g_r13_good);
    __atomic_store_n(&f0[3], next ? 2u : 1u, __ATOMIC_RELEASE);
    rt_log("long batch %d (K %d): %s, %s; bad %d good %d, samples fused %d honest %d; next %s",
           g_r13_batches, K, g_r13_fuse ? "fused" : "honest", paused ? "PROBED" : "sample",
           g_r13_bad, g_r13_good, g_r13_fused_samples, g_r13_honest_samples,
           next ? "fuse" : "honest");
  }
  return rc;
}
