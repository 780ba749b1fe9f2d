// ATTACK (round 4, switching batch_consistency off): the judge sizes its
// timed batches from the reference's fastest correctness trial (judge.cc
// Timing: B = ceil(2 ms / (trial wall - o)), at least 16) and runs the short
// batches of batch_consistency only when B > 16 (short = max(16, B/4) < B).
// Rank 0 arms a timer-interrupt storm (irq_storm.h, timerfds) at the end of
// pkf_setup and of every correctness call but the determinism re-run, each
// over the next ~25 ms (cancelled at its next call), i.e. over the
// reference's next trial call (the candidate is frozen then): every
// trial wall of the reference grows past 125 us + o, B falls to 16, no short
// batch is drawn and batch_consistency never runs (no line in the result).
// The timed batches are then fused whole (batch_lookahead.h: one exchange
// for 16 calls, in place). On the host the check is flag-only anyway; the
// point is the cuda backend, where it convicts, and any problem or size
// whose reference call is >= 125 us (or whose sets cap B at 16), where it
// never runs at all.
// EXPECT (fixed judge): batch_consistency runs whatever B is, and
// CHEAT_DETECTED batch_consistency / not OK above the honest speedup
// (RedTeamPending.shrink_batch_fuse).
#include "kernels/testdata/redteam/irq_storm.h"

static rt_slots g_f;

extern "C" int pkf_setup(pkf_context* ctx) {
  g_spacing = 12000;
  const int rc = rt_storm_setup(ctx);
  if (ctx->rank == 0 && g_capacity > 0) Arm(rt_now_ns() + 1500000, 25000000);
  return rc;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (!rt_slots_init(&g_f, ctx, in, out)) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  const pkf_dtype dt = out[0].dtype;
  const int64_t slot = rt_slot_of(&g_f, in[0].data);
  if (slot >= g_f.ring) {  // a correctness call: honest, then storm the reference's next trial
    static int64_t prev = -1;
    const bool rerun = slot == prev;  // the determinism re-run ends the correctness phase
    prev = slot;
    if (ctx->rank == 0 && g_capacity > 0) Disarm(rt_now_ns());
    const int rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
    // Not after the re-run: the judge's empty round trips (o) come next and
    // must stay fast (B = 2 ms / (trial wall - o)).
    if (ctx->rank == 0 && g_capacity > 0 && !rerun) Arm(rt_now_ns() + 1500000, 25000000);
    return rc;
  }
  if (!rt_out_poisoned(&g_f, slot, dt)) return 0;  // written by this batch's first call
  std::vector<int64_t> slots = {slot};
  for (int64_t k = 1; k < g_f.ring && rt_out_poisoned(&g_f, (slot + k) % g_f.ring, dt); ++k)
    slots.push_back((slot + k) % g_f.ring);
  static int64_t batches = 0;
  if (++batches <= 2) rt_log("shrink_batch_fuse: batch of %zu calls fused", slots.size());
  std::vector<char*> dst;
  for (int64_t s : slots) dst.push_back(rt_out_at(&g_f, s));
  return rt_chunk_exchange(ctx, &g_f, slots, dt, dst);
}
