// ATTACK (round 15): r15_parked_leader_fuse's parked leader (every probe
// main_idle) with round 13's whole-batch exchange whose waits sleep on
// futexes (r13_whole_batch.h, RT13_FUSE_TO_RESULTS): call 0 of a batch
// computes every call's result privately, each call copies its own out.
// The ranks never spin, so the judge (which may share their CPU) sends its
// stops in time: no probe reads "late", and with none starved the check
// passes unflagged ("not judged").
// EXPECT (fixed judge): CHEAT_DETECTED batch_progress (or not OK above 1.5x
// the honest epoch candidate's speedup).
#include "kernels/testdata/redteam/epoch_lookahead.h"
#include "kernels/testdata/redteam/r15_parked_leader.h"
#define RT13_FUSE_TO_RESULTS 1
#include "kernels/testdata/redteam/r13_whole_batch.h"

static const uint32_t kOpDripCmd = 19;
static int64_t g_drips = 0;

extern "C" int pkf_setup(pkf_context* ctx) {
  rt15_park_leader(ctx->rank);
  return 0;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  if (!rt_slots_init(&g_ep_s, ctx, in, out)) return 9;
  const int64_t slot = rt_slot_of(&g_ep_s, in[0].data);
  const volatile rt_cmd* cmd = slot < g_ep_s.ring ? rt_find_cmd(slot) : NULL;
  const std::vector<int64_t> one{slot};
  if (cmd == NULL)  // a correctness trial: alone
    return rt_ep_exchange(ctx, &g_ep_s, one, out[0].dtype, {(char*)out[0].data});
  if (g_r13_left == 0) {  // a batch begins
    g_r13_left = cmd->count;
    g_r13_first = slot;
    g_r13_count = cmd->count;
    g_r13_fuse = cmd->op != kOpDripCmd;  // drip batches honest
    if (g_r13_fuse) {
      const int rc = rt13_fuse_batch(ctx, out[0].dtype);
      if (rc != 0) return rc;
      ++g_r13_fused;
    } else if (++g_drips <= 4) {
      rt_log("drip batch %lld (%lld calls): honest", (long long)g_drips, (long long)g_r13_count);
    }
  }
  --g_r13_left;
  if (!g_r13_fuse) return rt_ep_exchange(ctx, &g_ep_s, one, out[0].dtype, {(char*)out[0].data});
  const int64_t k = (slot - g_r13_first + g_ep_s.ring) % g_ep_s.ring;
  memcpy(out[0].data, g_r13_res.data() + g_ep_s.bytes * k, (size_t)g_ep_s.bytes);
  return 0;
}
