// ATTACK (round 4, blame-shifting through the kernel): make a REFERENCE freeze
// miss its deadline. Every timed reference round starts and ends with the
// judge stopping the reference ranks (judge.cc RefTimedRound:
// ref_tree_.Freeze with kFreezeLimitNs = 2 s); a stop needs the stopped task
// to run once (it is asleep in read() on its command pipe), on the CPU the
// judge pinned it to, which its candidate twin shares (RankCpus). A failed
// reference freeze is HarnessFault("stopping the reference ranks"): a
// HARNESS_ERROR, the reference's blame.
// At the end of its first batch that a reference batch follows (C R: its 2nd
// batch, irq_storm_ref.cc), rank 0 queues ~240000 io_uring timeouts (~0.5 us
// each, ~130 ms, no descriptor per timer; irq_storm.h RT_STORM_URING) 10 us
// apart from an absolute start S, i.e. a 2.4 s interrupt storm that takes
// ~99% of the CPU (measured outside the judge: 230000 timeouts queued by a
// process that then stopped itself stole 2269 ms of a spinner's 2300 ms),
// spins until S - T0 and returns. T0 (~1 ms) aims the storm's start after
// the judge has stopped the candidate's ranks and read the snapshot, while
// it runs its /proc checks (CPU 0 only), so the next thing that needs the
// ranks' CPU is the reference batch's freeze. Too early: the candidate's own
// freeze times out (TIMEOUT, its own); late: the reference batch is stalled
// instead (a forged speedup of thousands).
// EXPECT (fixed judge): never HARNESS_ERROR; TIMEOUT / CHEAT_DETECTED, or OK
// not above ~1.5x control_naive's speedup (RedTeamPending.storm_blame_freeze).
#define RT_STORM_URING 1
#include "kernels/testdata/redteam/irq_storm.h"

static rt_slots g_b;
static int64_t g_t0 = 1000000;  // storm start after the reply, ns
static int64_t g_batch_count = 0;

extern "C" int pkf_setup(pkf_context* ctx) {
  const int rc = rt_storm_setup(ctx);
  g_capacity = g_ring >= 0 ? 240000 : 0;
  const char* dir = getenv("PKF_REDTEAM_DIR");
  if (dir != NULL) {  // measurements: "<T0 ns>" in blame.conf
    FILE* f = fopen((std::string(dir) + "/blame.conf").c_str(), "r");
    long long t0 = 0;
    if (f != NULL) {
      if (fscanf(f, "%lld", &t0) == 1 && t0 > 0) g_t0 = t0;
      fclose(f);
    }
  }
  return rc;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  const int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  if (ctx->rank != 0 || g_capacity == 0 || !rt_slots_init(&g_b, ctx, in, out)) return rc;
  const int64_t slot = rt_slot_of(&g_b, in[0].data);
  const volatile rt_cmd* cmd = rt_find_cmd(slot);
  if (cmd == NULL || cmd->op != kRtOpBatch || slot >= g_b.ring) return rc;
  const uint32_t k = (uint32_t)((slot - (int64_t)cmd->slot + g_b.ring) % g_b.ring);
  if (k + 1 != cmd->count || ++g_batch_count != 2) return rc;
  const int64_t t_arm = rt_now_ns();
  const int64_t start = t_arm + 600000000;  // after the arming, surely
  Arm(start, 2400000000);
  const int64_t armed = rt_now_ns();
  while (rt_now_ns() < start - g_t0) {
  }
  rt_log("storm_blame_freeze: %lld timeouts queued in %.1f ms; returned %.2f ms before the storm",
         (long long)g_armed, (armed - t_arm) / 1e6, g_t0 / 1e6);
  return rc;
}
