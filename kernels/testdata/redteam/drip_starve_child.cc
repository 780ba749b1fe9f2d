// ATTACK (round 8, against 3375167's "foreign" starvation rule): every drip
// batch made "starved" (inconclusive) by a spinner PROCESS, not a thread.
// judge.cc DripPair: starved = min(main-thread wait share, 1 - used) > 0.25,
// used = (RanksCpuNs(cands) + RanksCpuNs(refs)) / (wall x cpus). RanksCpuNs
// reads each rank PROCESS: its live threads' schedstat, or /proc/<pid>/stat
// utime+stime (exited threads included). A forked child is in neither: its
// CPU time goes to the parent's cutime only once reaped, and cutime is not
// read. So: at call 0 of a drip batch (told by the harness's kOpDrip command
// on the stack, as drip_starve_two_chunk) each rank forks a child that spins
// on the rank's CPU until the batch's last call, which stops and reaps it
// (no candidate process outlives the call: no outlived_call). The ranks'
// main threads wait for peers runnable (sched_yield) behind the child:
// share >> 0.25, used ~0.5 -> foreign > 0.25 -> every drip batch
// inconclusive -> batch_drip has no finding. Free batches: probe_two_chunk's
// fusion (every batch in two in-place exchanges).
// EXPECT (fixed judge): CHEAT_DETECTED batch_drip / batch_progress, or not
// OK above 1.5x the honest epoch's speedup.
#include "kernels/testdata/redteam/drip_child.h"
#include "kernels/testdata/redteam/drip_common.h"
#include "kernels/testdata/redteam/probe_dodge.h"

static const double kFirstShare = 0.26;
static int64_t g_drips = 0;

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (!rt_slots_init(&g_pd_s, ctx, in, out) || !rt_slots_init(&g_ep_s, ctx, in, out))
    return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  const rt_drip_pos d = rt_drip_where(&g_pd_s, in);
  if (d.drip) {
    if (g_dc_child <= 0) {
      dc_start();
      if (++g_drips <= 4)
        rt_log("drip batch %lld (%u calls) at call %u: spinner child %d", (long long)g_drips,
               d.count, d.k, g_dc_child);
    }
    const int rc = rt_drip_honest_call(ctx, d, out);
    dc_hold();
    if (d.k + 1 >= d.count) dc_stop();
    return rc;
  }
  dc_stop();  // never outlives a drip batch
  const rt_batch_pos p = rt_where(in);
  if (!p.batch) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);  // a trial
  const uint32_t c1 = std::max<uint32_t>(1, (uint32_t)(kFirstShare * p.count + 0.999));
  if (p.k == 0) return rt_fuse_range(ctx, p, in, out[0].dtype, 0, c1);
  if (p.k == c1) return rt_fuse_range(ctx, p, in, out[0].dtype, c1, p.count);
  return 0;  // written by the chunk's first call
}
