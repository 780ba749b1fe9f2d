// ATTACK (round 6, finding 2 at full strength): drip_starve_spinner's
// "starved" drip batches on top of probe_two_chunk's fusion (every batch in
// two exchanges written in place: 26% of the calls, then the rest). The
// drip batch is told by the harness's command on the stack (op kOpDrip =
// 19, rt_find_cmd's address; probe_two_chunk itself already ran drip
// batches as trials, with the barrier: slow, caught). There: one
// barrier-free epoch exchange per call (honest), and a private spinner
// thread started at call 0, joined in the batch's last call: its CPU time
// is in neither of RanksCpuNs's per-thread readings, the main threads wait
// behind it (runnable, sched_yield), so each drip batch is "starved" =
// inconclusive and batch_drip passes with no finding. batch_progress is
// left with probe_two_chunk's odds (round 5: OK in 8 of 12 runs).
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

static void* Spin(void*) {
  while (!__atomic_load_n(&g_spin_stop, __ATOMIC_ACQUIRE)) {
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
      if (pthread_create(&g_spin, NULL, Spin, NULL) == 0) g_spinning = true;
      if (++g_drips <= 4)
        rt_log("drip batch %lld (%u calls) at call %u: spinner started", (long long)g_drips,
               cmd->count, k);
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
