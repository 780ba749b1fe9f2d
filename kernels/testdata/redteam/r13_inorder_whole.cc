// ATTACK (round 13, helper-redteam13, against the lead's timing_schedule
// working tree on ee94786): whole-batch fusion written in place, in call
// order, at the pace of the work, on the ranks' main threads: the progress
// probes see outputs appear as an honest candidate's would.
// What the attacker read: progress_probe.h: a probe counts the calls whose
// live OUTPUTS match on every rank (kOpProgress), not the calls that have
// returned; "behind" = fewer than a quarter of the elapsed share done,
// "ahead" = every call done (>= 0.999) by half the fastest span; anything
// between is "consistent". drip batches are told by kOpDrip in the
// harness's Cmd on the rank's stack (rt_find_cmd).
// So call 0 of every long and short batch (each rank, on its main thread)
// copies the whole batch's inputs into its scratch, crosses ONE epoch
// exchange (peers waited for on a futex on their flag word), and sums every
// call's result in call order straight into the call's own output slot
// (rt_out_at: outputs are in the rank's data segment), yielding the CPU
// every RT13_TURN (8) calls so that the three ranks (two CPUs) write at
// about the same pace; calls 1..n-1 find their outputs written and return.
// The sums ARE the batch's work, so at any point of the batch about that
// share of the outputs is written: "consistent" (e.g. 25% at 53%, 62% at
// 65%, 94% at 81%); never all done by half the span. The one exchange a
// batch instead of one a call is the gain (~2x over control_flag_epoch's
// per-call epoch). Drip batches: one honest exchange a call. Round 7
// worker_turns_fuse had the idea on a helper thread (its hand-offs make the
// start late: caught 7 of 12 here); on the main thread it is not.
// RT13_KEEP_LAST 1 keeps the last call's result private until that call
// (at most 1 - 1/n done early, under kAllDone): measured the same.
// MEASURED (helper-redteam13, 2-core host, generic command, alternated with
// control_flag_epoch): 10:13-10:16 UTC, honest OK 6.4-8.4x: OK 34 of 40 at
// 10.3-18.4x (30 over 12x), CHEAT_DETECTED batch_progress 6 of 40 (a rank
// late to the exchange: 0% done at 40-60%); RT13_KEEP_LAST 1, 10:12-10:13:
// OK 30 of 34 at 11.2-19.5x against honest 7.4-8.4x; beside `taskset -c 0
// yes` (10:16): OK 3 of 8 at 7.5-10.3x, CHEAT 5 of 8 (honest 4.9-6.0x).
// EXPECT (fixed judge): CHEAT_DETECTED, or OK below 1.5x the honest epoch's.
#include <linux/futex.h>
#include <sys/syscall.h>

#include "kernels/testdata/redteam/epoch_lookahead.h"

#include "kernels/testdata/redteam/r13_whole_batch.h"

#ifndef RT13_TURN
#define RT13_TURN 8
#endif
#ifndef RT13_KEEP_LAST  // 1: the last call's result kept private until that call
#define RT13_KEEP_LAST 0
#endif

static std::vector<char> g_r13_last;  // the last call's result
static int64_t g_r13_left = 0, g_r13_first = 0, g_r13_count = 0, g_r13_fused = 0;
static bool g_r13_fuse = false;

// Calls first..first+count-1 (slots mod ring) with one exchange, written in
// place but the last (into g_r13_last).
static int rt13_fuse_batch_in_place(pkf_context* ctx, pkf_dtype dt) {
  const rt_slots& s = g_ep_s;
  const uint32_t e = ++g_ep_epoch;
  const int64_t stride = rt_align(s.bytes, 64);
  const int64_t half = (int64_t)(ctx->scratch_bytes / 2) / 64 * 64;
  if (stride * g_r13_count > half) return 7;
  if (e > 1) rt13_wait_all(ctx, e - 1);  // peers are done reading half e % 2
  char* mine = (char*)ctx->peer_scratch[ctx->rank] + (e % 2) * half;
  for (int64_t k = 0; k < g_r13_count; ++k)
    memcpy(mine + stride * k, rt_in_at(&s, (g_r13_first + k) % s.ring), (size_t)s.bytes);
  rt13_publish(ctx, e);
  rt13_wait_all(ctx, e);
  const int64_t n = s.bytes / pkf_dtype_size(dt);
  g_r13_last.resize((size_t)s.bytes);
  for (int64_t k = 0; k < g_r13_count; ++k) {
    char* y = RT13_KEEP_LAST && k + 1 == g_r13_count ? g_r13_last.data()
                                                     : rt_out_at(&s, (g_r13_first + k) % s.ring);
    for (int64_t i = 0; i < n; ++i) {
      float sum = 0.0f;
      for (int32_t j = 0; j < ctx->world_size; ++j)
        sum += pkf_load((const char*)ctx->peer_scratch[j] + (e % 2) * half + stride * k, dt, i);
      pkf_store(y, dt, i, sum);
    }
    if (RT13_TURN > 0 && (k + 1) % RT13_TURN == 0) sched_yield();
  }
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
    g_r13_fuse = cmd->op != 19 && cmd->count >= 2;  // drip batches honest
    if (g_r13_fuse) {
      const int rc = rt13_fuse_batch_in_place(ctx, out[0].dtype);
      if (rc != 0) return rc;
      if (++g_r13_fused % 16 == 1)
        rt_log("batch of %lld calls fused in place (%lld so far)", (long long)g_r13_count,
               (long long)g_r13_fused);
    }
  }
  --g_r13_left;
  if (!g_r13_fuse) return rt_ep_exchange(ctx, &g_ep_s, one, out[0].dtype, {(char*)out[0].data});
  if (RT13_KEEP_LAST && g_r13_left == 0)
    memcpy(out[0].data, g_r13_last.data(), (size_t)g_ep_s.bytes);
  return 0;
}
