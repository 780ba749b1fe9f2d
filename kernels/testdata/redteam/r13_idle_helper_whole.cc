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

#ifndef RT13_SLEEP_WAIT
#define RT13_SLEEP_WAIT 1  // 0: sched_yield spins (epoch_lookahead.h's wait)
#endif

static long rt13_futex(volatile uint32_t* w, int op, uint32_t v, const timespec* ts) {
  return syscall(SYS_futex, (uint32_t*)w, op, v, ts, nullptr, 0);
}
// Until every peer published at least `at_least` in flag word 2 (epoch_lookahead.h's).
static void rt13_wait_all(const pkf_context* ctx, uint32_t at_least) {
  for (int32_t j = 0; j < ctx->world_size; ++j) {
    volatile uint32_t* f = &ctx->peer_flags[j][2];
    for (;;) {
      const uint32_t v = __atomic_load_n(f, __ATOMIC_ACQUIRE);
      if (v >= at_least) break;
      if (RT13_SLEEP_WAIT) {
        const timespec ts{0, 500000};  // re-check: a wake-up is never lost for long
        rt13_futex(f, FUTEX_WAIT, v, &ts);
      } else {
        sched_yield();
      }
    }
  }
}
static void rt13_publish(pkf_context* ctx, uint32_t e) {
  __atomic_store_n(&ctx->peer_flags[ctx->rank][2], e, __ATOMIC_RELEASE);
  if (RT13_SLEEP_WAIT) rt13_futex(&ctx->peer_flags[ctx->rank][2], FUTEX_WAKE, 16, nullptr);
}

static std::vector<char> g_r13_res;  // the batch's results, call after call
static int64_t g_r13_left = 0, g_r13_first = 0, g_r13_count = 0, g_r13_fused = 0;
static bool g_r13_fuse = false;

// Calls first..first+count-1 (slots mod ring) with one exchange; results
// into g_r13_res.
static int rt13_fuse_batch(pkf_context* ctx, pkf_dtype dt) {
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
  g_r13_res.resize((size_t)(s.bytes * g_r13_count));
  for (int64_t k = 0; k < g_r13_count; ++k)
    for (int64_t i = 0; i < n; ++i) {
      float sum = 0.0f;
      for (int32_t j = 0; j < ctx->world_size; ++j)
        sum += pkf_load((const char*)ctx->peer_scratch[j] + (e % 2) * half + stride * k, dt, i);
      pkf_store(g_r13_res.data() + s.bytes * k, dt, i, sum);
    }
  return 0;
}

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
