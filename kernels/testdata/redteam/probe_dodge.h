// Test-only helpers for the round-5 attacks on batch_progress (the judge's
// progress probes, kernels/harness/progress_probe.h, judge.cc Timing):
// probe_window_dodge, probe_two_chunk, probe_adapt_after_stop.
//
// What the attacker knows (judge.cc at 93d7640): probes are drawn among the
// timed batches j in [kProbeAfter + kShortBatches, total) = [5, total) (j = 0
// is the first timed batch after the warm-up ones), never on a short batch;
// made-up probes come after the last timed batch; a probe stops the
// candidate at 30-70% of its fastest earlier long batch and counts the calls
// whose outputs already match; "behind" = fewer than a quarter of that share
// done; cheat = >= 2 anomalous and >= 3/4 of the conclusive probes. The
// official time is the median over the long timed batches. Every thaw of the
// candidate is a SIGCONT (candidate_processes.cc), a probed batch gets two.
//
// allreduce only (the battery's problem), like batch_lookahead.h.
#pragma once

#include <sched.h>
#include <signal.h>

#include "kernels/testdata/redteam/chunk_lookahead.h"

// The judge's schedule (judge.cc): warm-up batches min(--warmup, 2) (the
// battery runs --warmup 1), and the first timed batch a probe may land on.
static const int kRtWarm = 1;
static const int kRtFirstProbe = 5;  // kProbeAfter (3) + kShortBatches (2)

// ---- which batch is this --------------------------------------------------------
struct rt_batch_pos {
  bool batch = false;   // a timed-phase batch (not a correctness trial)
  bool first = false;   // first call of its batch
  bool last = false;    // last call of its batch
  uint32_t k = 0;       // index of this call in its batch
  uint32_t count = 0;   // calls in the batch
  int64_t j = -1000;    // the judge's batch index (warm-up < 0)
  bool is_short = false;
};
static rt_slots g_pd_s;
static int64_t g_pd_batches = 0;
static uint32_t g_pd_longest = 0;
static inline rt_batch_pos rt_where(const pkf_tensor* in) {
  rt_batch_pos p;
  const int64_t slot = rt_slot_of(&g_pd_s, in[0].data);
  const volatile rt_cmd* cmd = rt_find_cmd(slot);
  if (cmd == NULL || cmd->op != kRtOpBatch || slot >= g_pd_s.ring) return p;
  p.batch = true;
  p.count = cmd->count;
  p.k = (uint32_t)((slot - (int64_t)cmd->slot + g_pd_s.ring) % g_pd_s.ring);
  p.first = p.k == 0;
  p.last = p.k + 1 == p.count;
  if (p.first) {
    ++g_pd_batches;
    if (p.count > g_pd_longest) g_pd_longest = p.count;  // the warm-up batch is long
  }
  p.j = g_pd_batches - 1 - kRtWarm;
  p.is_short = p.count < g_pd_longest;
  return p;
}
static inline int64_t rt_batch_slot(const rt_batch_pos& p, const pkf_tensor* in, uint32_t k) {
  const int64_t slot = rt_slot_of(&g_pd_s, in[0].data);
  return ((slot - (int64_t)p.k + (int64_t)k) % g_pd_s.ring + g_pd_s.ring) % g_pd_s.ring;
}

// ---- calls [k0, k1) of the batch with ONE exchange, written in place ---------------
static inline int rt_fuse_range(pkf_context* ctx, const rt_batch_pos& p, const pkf_tensor* in,
                                pkf_dtype dt, uint32_t k0, uint32_t k1) {
  std::vector<int64_t> slots;
  std::vector<char*> dst;
  for (uint32_t k = k0; k < k1 && k < p.count; ++k) {
    slots.push_back(rt_batch_slot(p, in, k));
    dst.push_back(rt_out_at(&g_pd_s, slots.back()));
  }
  if (slots.empty()) return 0;
  return rt_chunk_exchange(ctx, &g_pd_s, slots, dt, dst);
}

// ---- the honest per-call algorithm (control_flag_epoch): no barrier, a new
// flag value per call, two scratch buffers by call parity ----------------------------
static uint32_t g_pd_epoch = 0;
static inline void rt_wait_all(const pkf_context* ctx, uint32_t at_least) {
  for (int32_t j = 0; j < ctx->world_size; ++j) {
    volatile uint32_t* f = ctx->peer_flags[j];
    while (__atomic_load_n(&f[0], __ATOMIC_ACQUIRE) < at_least) sched_yield();
  }
}
static inline int rt_epoch_call(pkf_context* ctx, const pkf_tensor* in, pkf_tensor* out) {
  const uint32_t e = ++g_pd_epoch;
  const pkf_dtype dt = out[0].dtype;
  const int64_t n = pkf_numel(&out[0]);
  const int64_t bytes = n * pkf_dtype_size(dt);
  const int64_t quarter = (int64_t)(ctx->scratch_bytes / 4) / 64 * 64;  // the lower half
  if (bytes > quarter) return 9;
  if (e > 1) rt_wait_all(ctx, e - 1);
  char* mine = (char*)ctx->peer_scratch[ctx->rank] + (e % 2) * quarter;
  memcpy(mine, in[0].data, (size_t)bytes);
  __atomic_store_n(&ctx->peer_flags[ctx->rank][0], e, __ATOMIC_RELEASE);
  rt_wait_all(ctx, e);
  for (int64_t i = 0; i < n; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < ctx->world_size; ++j)
      s += pkf_load((const char*)ctx->peer_scratch[j] + (e % 2) * quarter, dt, i);
    pkf_store(out[0].data, dt, i, s);
  }
  return 0;
}

// ---- was the previous batch probed? (two SIGCONTs: the thaw, and the thaw after
// the probe's stop) -----------------------------------------------------------------
static std::atomic<int64_t> g_pd_conts{0};
static void rt_on_cont(int) { g_pd_conts.fetch_add(1, std::memory_order_relaxed); }
static inline void rt_watch_conts() {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = rt_on_cont;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGCONT, &sa, NULL);
}
// At the first call of every batch: how many SIGCONTs since the first call of
// the previous batch (1 = plain, 2 = the previous batch was stopped mid-way).
static int64_t g_pd_conts_at_first = -1;
static inline int64_t rt_conts_since_prev_batch() {
  const int64_t now = g_pd_conts.load(std::memory_order_relaxed);
  const int64_t d = g_pd_conts_at_first < 0 ? 0 : now - g_pd_conts_at_first;
  g_pd_conts_at_first = now;
  return d;
}
