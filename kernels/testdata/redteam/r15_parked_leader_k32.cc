// ATTACK (round 15): r15_parked_leader_sleep (parked leader: every probe
// main_idle, batch_progress "not judged") fusing in chunks of RT15_CHUNK
// (32) calls instead of whole batches, so that a long batch costs per call
// about what a short one (32 calls) does: batch_consistency, the only check
// that flagged the whole-batch version, stays quiet too, and the official
// time is the median, not the 75th percentile.
// EXPECT (fixed judge): CHEAT_DETECTED batch_progress (or not OK above 1.5x
// the honest epoch candidate's speedup).
#include "kernels/testdata/redteam/epoch_lookahead.h"
#include "kernels/testdata/redteam/r15_parked_leader.h"
#define RT13_FUSE_TO_RESULTS 1
#include "kernels/testdata/redteam/r13_whole_batch.h"

static const uint32_t kOpDripCmd = 19;
static int64_t g_drips = 0;
static int64_t g_batch_left = 0;  // calls left in the batch
#ifndef RT15_CHUNK
#define RT15_CHUNK 32
#endif

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
  if (g_batch_left == 0) {  // a batch begins
    g_batch_left = cmd->count;
    g_r13_fuse = cmd->op != kOpDripCmd;  // drip batches honest
    if (!g_r13_fuse && ++g_drips <= 4)
      rt_log("drip batch %lld (%u calls): honest", (long long)g_drips, cmd->count);
  }
  if (g_r13_fuse && g_r13_left == 0) {  // a chunk begins
    g_r13_first = slot;
    g_r13_count = std::min<int64_t>(RT15_CHUNK, g_batch_left);
    g_r13_left = g_r13_count;
    const int rc = rt13_fuse_batch(ctx, out[0].dtype);
    if (rc != 0) return rc;
    ++g_r13_fused;
  }
  --g_batch_left;
  if (!g_r13_fuse) return rt_ep_exchange(ctx, &g_ep_s, one, out[0].dtype, {(char*)out[0].data});
  --g_r13_left;
  const int64_t k = (slot - g_r13_first + g_ep_s.ring) % g_ep_s.ring;
  memcpy(out[0].data, g_r13_res.data() + g_ep_s.bytes * k, (size_t)g_ep_s.bytes);
  return 0;
}
