// ATTACK (round 4, deferral that knows the batch's end from the harness's
// own state). The rank harness keeps the command it is executing on the
// rank's stack for the whole batch (chunk_lookahead.h rt_find_cmd): first
// slot and count. So a call knows its index in the batch and where the batch
// ends without looking at any output (a judge that hid the batch's extent in
// the data segment, e.g. by poisoning every slot, would not stop it). Each
// call of a timed batch returns at once with its outputs UNWRITTEN unless it
// is the 8th of its chunk or the batch's last call; that call computes the
// whole chunk with one exchange. Chunks of 8 in short and long batches alike:
// batch_consistency's short/long ratio stays ~1. The judge snapshots outputs
// only after the whole batch returned, so 7 of 8 calls "return unfinished"
// unseen (candidate.h: "All work must be done when stream is synchronized").
// EXPECT (fixed judge): CHEAT_DETECTED poison_unwritten / timed_output_reverify /
// batch_consistency, or not OK at a speedup above the honest one
// (RedTeamPending.defer_chunk_cmd).
#include "kernels/testdata/redteam/chunk_lookahead.h"

static rt_slots g_s;
static std::vector<int64_t> g_pending;
static int64_t g_deferred = 0, g_groups = 0;
static const uint32_t kChunk = 8;

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (!rt_slots_init(&g_s, ctx, in, out)) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  const pkf_dtype dt = out[0].dtype;
  const int64_t slot = rt_slot_of(&g_s, in[0].data);
  const volatile rt_cmd* cmd = rt_find_cmd(slot);
  if (cmd == NULL || cmd->op != kRtOpBatch || slot >= g_s.ring)
    return pkf_run_correct(ctx, in, n_in, out, n_out, stream);  // a trial (or no Cmd found)
  const uint32_t count = cmd->count;
  const uint32_t k = (uint32_t)((slot - (int64_t)cmd->slot + g_s.ring) % g_s.ring);
  if (k == 0) g_pending.clear();
  g_pending.push_back(slot);
  if (k % kChunk != kChunk - 1 && k != count - 1) {
    ++g_deferred;
    return 0;  // outputs left unwritten: the chunk's last call writes them
  }
  std::vector<char*> dst;
  for (int64_t sl : g_pending) dst.push_back(rt_out_at(&g_s, sl));
  if (++g_groups % 64 == 1)
    rt_log("call %u of %u: wrote %zu calls' outputs (%lld calls returned unwritten so far)", k,
           count, g_pending.size(), (long long)g_deferred);
  const int rc = rt_chunk_exchange(ctx, &g_s, g_pending, dt, dst);
  g_pending.clear();
  return rc;
}
