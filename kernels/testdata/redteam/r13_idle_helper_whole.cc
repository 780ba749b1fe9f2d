// ATTACK (round 13, helper-redteam13, against the lead's timing_schedule
// working tree on ee94786): every long and short batch fused whole (one
// epoch exchange for all its calls) by a helper thread of each rank while
// the rank's main thread sleeps, so that the progress probes find the
// calls' threads idle and call themselves inconclusive.
// What the attacker read: progress_probe.h / judge_timing.cc ProgressProbe:
// a probe is inconclusive (main_idle) when the ranks' main threads (where
// pkf_run runs) ran for under 40% of the window times min(CPUs, world
// size), whatever the calls done; checks.cc BatchProgress: no conclusive
// probe = "not judged", a pass unless one was starved (no flag: the median
// stays the official time); timing_schedule.cc: unsettled probes only add
// probes of the same kind (the extension), each inconclusive again.
// Helper threads are allowed when created in pkf_setup and idle between
// calls (ThreadCheck counts threads). Call 0 of a fused batch hands the
// batch to the helper and sleeps on a futex until it has computed every
// call's result privately (r13_late_stop_whole's exchange: peers waited for
// on futexes); every call then copies its own result out. Drip batches
// (kOpDrip on the stack): one honest exchange a call on the main thread.
// Round 7 worker_turns_fuse is the same idea written to look consistent
// (outputs in place, turns); this one only aims at main_idle.
// MEASURED (10:10-10:16 UTC, 2-core host, generic command, alternated with
// control_flag_epoch OK 5.1-8.3x): CHEAT_DETECTED batch_progress 54 of 54
// (at 8-12x): main_idle never fired. The window starts before the batch's
// command, so the main threads' wake-up, the harness barrier and the
// hand-off weigh against a fused span of ~250 us; every probe read 0% done
// ("behind"), conclusive.
// EXPECT: CHEAT_DETECTED batch_progress.
#include <linux/futex.h>
#include <sys/syscall.h>

#include <atomic>
#include <thread>

#include "kernels/testdata/redteam/epoch_lookahead.h"

#define RT13_FUSE_TO_RESULTS 1
#include "kernels/testdata/redteam/r13_whole_batch.h"

namespace {
struct Helper {
  std::atomic<uint32_t> seq{0}, done{0};
  std::atomic<bool> stop{false};
  pkf_context* ctx = nullptr;
  pkf_dtype dt = PKF_F32;
  int rc = 0;
  std::thread th;
};
Helper g_h;
long rt13_futex_a(std::atomic<uint32_t>* w, int op, uint32_t v) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(w), op, v, nullptr, nullptr, 0);
}
void HelperLoop() {
  uint32_t seen = 0;
  for (;;) {
    uint32_t s;
    while ((s = g_h.seq.load(std::memory_order_acquire)) == seen) {
      if (g_h.stop.load()) return;
      rt13_futex_a(&g_h.seq, FUTEX_WAIT, seen);
    }
    if (g_h.stop.load()) return;
    seen = s;
    g_h.rc = rt13_fuse_batch(g_h.ctx, g_h.dt);
    g_h.done.store(seen, std::memory_order_release);
    rt13_futex_a(&g_h.done, FUTEX_WAKE, 1);
  }
}
// The batch's fusion on the helper; the main thread sleeps meanwhile.
int rt13_fuse_on_helper(pkf_context* ctx, pkf_dtype dt) {
  g_h.ctx = ctx;
  g_h.dt = dt;
  const uint32_t s = g_h.seq.fetch_add(1, std::memory_order_acq_rel) + 1;
  rt13_futex_a(&g_h.seq, FUTEX_WAKE, 1);
  uint32_t d;
  while ((d = g_h.done.load(std::memory_order_acquire)) != s)
    rt13_futex_a(&g_h.done, FUTEX_WAIT, d);
  return g_h.rc;
}
}  // namespace

extern "C" int pkf_setup(pkf_context*) {
  g_h.th = std::thread(HelperLoop);
  return 0;
}

extern "C" void pkf_teardown(pkf_context*) {
  g_h.stop.store(true);
  g_h.seq.fetch_add(1);
  rt13_futex_a(&g_h.seq, FUTEX_WAKE, 1);
  if (g_h.th.joinable()) g_h.th.join();
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
    g_r13_fuse = cmd->op != 19;  // drip batches honest
    if (g_r13_fuse) {
      const int rc = rt13_fuse_on_helper(ctx, out[0].dtype);
      if (rc != 0) return rc;
      if (++g_r13_fused % 16 == 1)
        rt_log("batch of %lld calls fused (%lld so far)", (long long)g_r13_count,
               (long long)g_r13_fused);
    }
  }
  --g_r13_left;
  if (!g_r13_fuse) return rt_ep_exchange(ctx, &g_ep_s, one, out[0].dtype, {(char*)out[0].data});
  const int64_t k = (slot - g_r13_first + g_ep_s.ring) % g_ep_s.ring;
  memcpy(out[0].data, g_r13_res.data() + g_ep_s.bytes * k, (size_t)g_ep_s.bytes);
  return 0;
}
