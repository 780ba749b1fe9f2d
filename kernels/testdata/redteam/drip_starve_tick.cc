// ATTACK (round 6, against a fix of finding 2 that counts the candidate's
// CPU time from /proc/<pid>/stat utime + stime, whole process, exited
// threads included): those are 10 ms clock ticks. The candidate knows its
// precise process CPU time (CLOCK_PROCESS_CPUTIME_ID, dead threads
// included) and lets its drip-batch spinner (drip_starve_two_chunk's) run
// only up to 2 ms before the next 10 ms boundary of it: the tick total
// does not move, the thread list does not show the spinner, and max(live
// threads, ticks) hides what it used while the main threads waited behind
// it. Free-running batches: probe_two_chunk's fusion.
// EXPECT (fixed judge): CHEAT_DETECTED batch_drip / batch_progress, or not
// OK above 1.5x the honest epoch's speedup.
#include <pthread.h>

#include "kernels/testdata/redteam/epoch_lookahead.h"
#include "kernels/testdata/redteam/probe_dodge.h"

static const double kFirstShare = 0.26;
static const uint32_t kOpDripCmd = 19;
static pthread_t g_spin;
static volatile int g_spin_stop = 0;
static bool g_spinning = false;
static int64_t g_drips = 0;

static int64_t g_spin_limit_ns = 0, g_spin_budget_ns = 0;
static int64_t ProcessCpuNow() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
// Spins until told to stop or until the process's CPU time reaches the limit.
static void* Spin(void*) {
  while (!__atomic_load_n(&g_spin_stop, __ATOMIC_ACQUIRE) && ProcessCpuNow() < g_spin_limit_ns) {
  }
  return NULL;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (!rt_slots_init(&g_pd_s, ctx, in, out) || !rt_slots_init(&g_ep_s, ctx, in, out))
    return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  const int64_t slot = rt_slot_of(&g_pd_s, in[0].data);
  const volatile rt_cmd* cmd = rt_find_cmd(slot);
  if (cmd != NULL && cmd->op == kOpDripCmd && slot < g_pd_s.ring) {
    const uint32_t k = (uint32_t)((slot - (int64_t)cmd->slot + g_pd_s.ring) % g_pd_s.ring);
    if (!g_spinning) {
      g_spin_stop = 0;
      // Up to 2 ms (the main threads' own calls) before the next 10 ms tick.
      const int64_t now = ProcessCpuNow(), tick = 10000000;
      g_spin_limit_ns = (now / tick + 1) * tick - 2000000;
      g_spin_budget_ns = g_spin_limit_ns - now;
      if (pthread_create(&g_spin, NULL, Spin, NULL) == 0) g_spinning = true;
      if (++g_drips <= 4)
        rt_log("drip batch %lld (%u calls) at call %u: spinner started, budget %.2f ms",
               (long long)g_drips, cmd->count, k, g_spin_budget_ns / 1e6);
    }
    const std::vector<int64_t> one{slot};
    const int rc = rt_ep_exchange(ctx, &g_ep_s, one, out[0].dtype, {(char*)out[0].data});
    if (k + 1 >= cmd->count && g_spinning) {
      __atomic_store_n(&g_spin_stop, 1, __ATOMIC_RELEASE);
      pthread_join(g_spin, NULL);
      g_spinning = false;
    }
    return rc;
  }
  const rt_batch_pos p = rt_where(in);
  if (!p.batch) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);  // a trial
  const uint32_t c1 = std::max<uint32_t>(1, (uint32_t)(kFirstShare * p.count + 0.999));
  if (p.k == 0) return rt_fuse_range(ctx, p, in, out[0].dtype, 0, c1);
  if (p.k == c1) return rt_fuse_range(ctx, p, in, out[0].dtype, c1, p.count);
  return 0;  // written by the chunk's first call
}
