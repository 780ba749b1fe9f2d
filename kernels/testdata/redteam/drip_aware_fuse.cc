// ATTACK (round 6, after c92a882): whole-batch fusion, honest on drip
// batches. Since c92a882 a progress probe is inconclusive when the
// candidate's fastest batch took under 1 ms - and a whole-batch fuser's
// batches are all under 1 ms (its wake-up plus one exchange): batch_progress
// can no longer see it, batch_drip is the only guard. The drip batch is told
// by the harness's kOpDrip command on the rank's stack (rt_find_cmd's
// address); there every call is one barrier-free epoch exchange (honest,
// the ~41-44 us drip floor of any barrier-free candidate); everywhere else
// call 0 computes the whole batch with one exchange, in place, and the
// other calls return at once. batch_drip's allowance (half the reference's
// hand-off cost + 3 us, the hand-off measured against the reference's
// smaller free time since de5d894) is ~17 us: 44 - f - H <= 0.5 H + 3 holds
// whenever H >= ~27 us.
// EXPECT (fixed judge): CHEAT_DETECTED batch_drip / batch_progress, or not
// OK above 1.5x the honest epoch's speedup.
#include "kernels/testdata/redteam/epoch_lookahead.h"
#include "kernels/testdata/redteam/probe_dodge.h"

static const uint32_t kOpDripCmd = 19;
static int64_t g_drips = 0;

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (!rt_slots_init(&g_pd_s, ctx, in, out) || !rt_slots_init(&g_ep_s, ctx, in, out))
    return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  const int64_t slot = rt_slot_of(&g_pd_s, in[0].data);
  const volatile rt_cmd* cmd = rt_find_cmd(slot);
  if (cmd != NULL && cmd->op == kOpDripCmd && slot < g_pd_s.ring) {
    const uint32_t k = (uint32_t)((slot - (int64_t)cmd->slot + g_pd_s.ring) % g_pd_s.ring);
    if (k == 0 && ++g_drips <= 4)
      rt_log("drip batch %lld (%u calls): honest", (long long)g_drips, cmd->count);
    const std::vector<int64_t> one{slot};
    return rt_ep_exchange(ctx, &g_ep_s, one, out[0].dtype, {(char*)out[0].data});
  }
  const rt_batch_pos p = rt_where(in);
  if (!p.batch) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);  // a trial
  if (p.k == 0) return rt_fuse_range(ctx, p, in, out[0].dtype, 0, p.count);
  return 0;  // written by the batch's first call
}
