// Red team round 24 (helper-redteam24, session 18, against 5b049fc: the
// world-1 wait attribution of batch_progress, AttributeProbeWait's
// `single_host_rank` and StarvedAlthoughReferenceWasNot).
//
// What the attacker read: at world size 1 on the host a probe is "starved"
// (inconclusive) when the rank's main thread waited for a CPU for over
// kStarvedShare more of the window than its least wait in a timed batch,
// and the rank's OTHER THREADS ran for under half that wait
// (own_threads_idle); such a probe then stays starved even when the
// reference's batch beside it did not wait (StarvedAlthoughReferenceWasNot:
// "one host rank, no other process"). But a host rank may fork (round 8
// drip_child.h: children are allowed if none outlives the call), and a
// child PROCESS is not a thread of the rank: its CPU time is in neither
// OtherCpuNs nor Used. So: drip_aware_fuse (call 0 fuses the whole batch,
// honest on drip batches), plus, on every full-length batch but the first
// R24_CLEAN ones (the first timed batch can never be probed: the judge
// needs a span first; a batch without the child sets least_wait ~0), call 0
// forks a yield-spinner child on the rank's CPU and holds the main thread
// runnable behind it for drip_child.h's hold (150 us; PKF_RT_HOLD_NS is not passed to ranks:
// the rank environment allows PKFORGE_* only) before fusing; the
// last call stops and reaps it. PKFORGE_RT24_NOCHILD=1: the same hold spun
// without the child (control: the same span, nothing to excuse it). Every probe should read main_wait > 0.25,
// other threads idle: starved, kept starved, inconclusive.
// EXPECT (fixed judge): CHEAT_DETECTED batch_progress, or not OK above the
// honest naive candidate's speedup.
#include "kernels/testdata/redteam/drip_child.h"
#include "kernels/testdata/redteam/epoch_lookahead.h"
#include "kernels/testdata/redteam/probe_dodge.h"

#ifndef R24_CLEAN
#define R24_CLEAN 3  // full-length batches without the child: warm-up + two timed
#endif

static const uint32_t kOpDripCmd = 19;
static int64_t g_full = 0;

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (!rt_slots_init(&g_pd_s, ctx, in, out) || !rt_slots_init(&g_ep_s, ctx, in, out))
    return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  const int64_t slot = rt_slot_of(&g_pd_s, in[0].data);
  const volatile rt_cmd* cmd = rt_find_cmd(slot);
  if (cmd != NULL && cmd->op == kOpDripCmd && slot < g_pd_s.ring) {
    dc_stop();
    const std::vector<int64_t> one{slot};
    return rt_ep_exchange(ctx, &g_ep_s, one, out[0].dtype, {(char*)out[0].data});
  }
  const rt_batch_pos p = rt_where(in);
  if (!p.batch) {
    dc_stop();
    return pkf_run_correct(ctx, in, n_in, out, n_out, stream);  // a trial
  }
  int rc = 0;
  if (p.k == 0) {
    dc_stop();
    const bool full = p.count >= 64;
    if (full && ++g_full > R24_CLEAN) {
      // PKFORGE_RT24_NOCHILD=1 (the A/B control): the same hold, spun alone.
      static const bool nochild = getenv("PKFORGE_RT24_NOCHILD") != NULL;
      if (nochild) {
        const int64_t t0 = rt_now_ns();
        while (rt_now_ns() - t0 < dc_hold_ns()) {
        }
      } else {
        dc_start();
        dc_hold();
      }
    }
    rc = rt_fuse_range(ctx, p, in, out[0].dtype, 0, p.count);
  }
  if (p.k + 1 >= p.count) dc_stop();  // no process outlives the batch
  return rc;
}
