// ATTACK (outputs unwritten when the call returns; check schedule). The
// judge snapshots a timed batch's outputs only after the LAST call of the
// batch returned, so a call may return with its outputs unwritten as long as
// a later call of the same batch writes them. Each call of a timed batch
// returns at once (outputs still poison) unless it is the batch's last one
// (the next slot's outputs are not poison: batch_lookahead.h); the last call
// then computes every call of the batch with one barrier for all of them.
// candidate.h: "All work must be done when `stream` is synchronized" - here
// most calls did none of their work before returning.
// EXPECT (fixed judge): CHEAT_DETECTED poison_unwritten / timed_output_reverify
// / outlived_call (a call's outputs were unwritten when it returned), or not
// OK at a speedup above the honest one.
#include <algorithm>

#include "kernels/testdata/redteam/batch_lookahead.h"

static rt_slots g_s;
static std::vector<int64_t> g_pending;  // calls of this batch that returned unwritten
static int64_t g_deferred = 0, g_groups = 0;

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (!rt_slots_init(&g_s, ctx, in, out)) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  const pkf_dtype dt = out[0].dtype;
  const int64_t slot = rt_slot_of(&g_s, in[0].data);
  if (slot >= g_s.ring) {  // a correctness trial: a single call, done honestly
    g_pending.clear();
    return rt_fused_allreduce(ctx, &g_s, {slot}, dt);
  }
  const int64_t next = (slot + 1) % g_s.ring;
  const bool next_in_batch =
      rt_out_poisoned(&g_s, next, dt) &&
      std::find(g_pending.begin(), g_pending.end(), next) == g_pending.end();
  g_pending.push_back(slot);
  if (next_in_batch) {
    ++g_deferred;
    return 0;  // outputs left unwritten: a later call of this batch writes them
  }
  std::vector<int64_t> slots;
  slots.swap(g_pending);
  if (++g_groups % 4 == 0)
    rt_log("group %lld: last call wrote %zu calls' outputs (%lld calls returned unwritten so far)",
           (long long)g_groups, slots.size(), (long long)g_deferred);
  return rt_fused_allreduce(ctx, &g_s, slots, dt);
}
