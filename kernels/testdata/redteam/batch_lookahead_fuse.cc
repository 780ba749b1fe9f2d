// ATTACK (timing / check schedule: reading calls not yet made). Every input
// set of a timed batch is generated before the batch starts, in the rank's
// own data segment, and the judge looks at the outputs only once the whole
// batch has returned (poison_at_start before it, the snapshot after it). At
// the first call of a batch each rank finds the batch's other slots (their
// outputs are still poison: batch_lookahead.h), publishes the inputs of ALL
// of them in its scratch at once, crosses ONE barrier and writes every
// call's outputs; the remaining calls of the batch find their outputs
// already written and return at once. The result is bitwise the reference's.
// The reference pays its synchronization once per call, the candidate once
// per batch: a speedup that no single call has (on the cuda backend: one
// NCCL call for a whole batch of latency-bound messages).
// EXPECT (fixed judge): not OK at a speedup above the honest one, e.g.
// CHEAT_DETECTED poison_at_start (outputs of call k+1 were written before
// call k+1 started) or timed_output_reverify.
#include "kernels/testdata/redteam/batch_lookahead.h"

static rt_slots g_s;
static int64_t g_fused_calls = 0, g_free_calls = 0, g_groups = 0;

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (!rt_slots_init(&g_s, ctx, in, out)) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  const pkf_dtype dt = out[0].dtype;
  const int64_t slot = rt_slot_of(&g_s, in[0].data);
  if (!rt_out_poisoned(&g_s, slot, dt)) {
    // Written by the first call of this batch: nothing left to do.
    ++g_free_calls;
    return 0;
  }
  std::vector<int64_t> slots = {slot};
  if (slot < g_s.ring) {  // a timed batch (trials are single calls past the ring)
    for (int64_t k = 1; k < g_s.ring; ++k) {
      const int64_t next = (slot + k) % g_s.ring;
      if (!rt_out_poisoned(&g_s, next, dt)) break;
      slots.push_back(next);
    }
  }
  g_fused_calls += (int64_t)slots.size();
  if (++g_groups % 4 == 0 || slots.size() > 1)
    rt_log("group %lld: %zu calls fused at slot %lld (so far %lld fused, %lld free)",
           (long long)g_groups, slots.size(), (long long)slot, (long long)g_fused_calls,
           (long long)g_free_calls);
  return rt_fused_allreduce(ctx, &g_s, slots, dt);
}
