// Test-only helpers for the round-6 drip attacks (drip_chunk_epoch_k*):
// private look-ahead in chunks of K calls (chunk_lookahead.h's idea) with
// the barrier-free epoch exchange of control_flag_epoch instead of the
// harness barrier: one epoch per chunk, so a free-running call costs about
// 1/K of the best honest call.
//
// What the attacker read (drip_check.cc, judge.cc DripPair, rank.cc):
// batch_drip calls a drip batch slow only when the candidate's per-call
// drip time, less its free-running time, exceeds the REFERENCE's hand-off
// cost (reference drip - reference free) by max(free, half that cost + 3
// us). On one shared CPU every barrier-free candidate's drip call costs a
// fixed ~44 us (3 ranks + 3 watchers switching), the reference's a steady
// ~63.5 us, so the rule turns on the reference's free median R alone: with
// free f the drip is consistent while 44 - f - (63.5 - R) <= 0.5 (63.5 - R)
// + 3, i.e. R < ~40 us for an honest f ~6 us and R < ~37 us for an
// amortized f ~1 us: alike. On drip batches this
// code needs nothing special: a chunk computed on decoys misses the cache
// (its inputs changed when released), so every drip call is one exchange,
// as an honest call.
//
// allreduce only (the battery's problem).
#pragma once

#include <sched.h>
#include <time.h>

#include <vector>

#include "kernels/testdata/redteam/chunk_lookahead.h"

static uint32_t g_ep_epoch = 0;

// Flag word 2 of the signal pad (control_flag_epoch uses 0, the direct
// helpers 1): the epoch of the chunk a rank has published.
static inline void rt_ep_wait_all(const pkf_context* ctx, uint32_t at_least) {
  for (int32_t j = 0; j < ctx->world_size; ++j) {
    volatile uint32_t* f = ctx->peer_flags[j];
    while (__atomic_load_n(&f[2], __ATOMIC_ACQUIRE) < at_least) sched_yield();
  }
}

// One epoch exchange for the calls on `slots` (inputs copied into scratch
// half e % 2; the reference's order and arithmetic: bitwise the same).
static inline int rt_ep_exchange(pkf_context* ctx, const rt_slots* s,
                                 const std::vector<int64_t>& slots, pkf_dtype dt,
                                 const std::vector<char*>& dst) {
  const uint32_t e = ++g_ep_epoch;
  const int64_t stride = rt_align(s->bytes, 64);
  const int64_t half = (int64_t)(ctx->scratch_bytes / 2) / 64 * 64;
  if (stride * (int64_t)slots.size() > half) return 7;
  if (e > 1) rt_ep_wait_all(ctx, e - 1);  // peers are done reading half e % 2
  char* mine = (char*)ctx->peer_scratch[ctx->rank] + (e % 2) * half;
  for (size_t k = 0; k < slots.size(); ++k)
    memcpy(mine + stride * (int64_t)k, rt_in_at(s, slots[k]), (size_t)s->bytes);
  __atomic_store_n(&ctx->peer_flags[ctx->rank][2], e, __ATOMIC_RELEASE);
  rt_ep_wait_all(ctx, e);
  const int64_t n = s->bytes / pkf_dtype_size(dt);
  for (size_t k = 0; k < slots.size(); ++k)
    for (int64_t i = 0; i < n; ++i) {
      float sum = 0.0f;
      for (int32_t j = 0; j < ctx->world_size; ++j)
        sum += pkf_load((const char*)ctx->peer_scratch[j] + (e % 2) * half + stride * (int64_t)k,
                        dt, i);
      pkf_store(dst[k], dt, i, sum);
    }
  return 0;
}

struct rt_ep_cached {
  bool valid = false;
  std::vector<char> in, out;
};
static rt_slots g_ep_s;
static std::vector<rt_ep_cached> g_ep_cache;
static int64_t g_ep_hits = 0, g_ep_chunks = 0;

// Call i of a timed batch that finds no cached result computes calls
// i..i+K-1 (those still in the batch: outputs still poison) with one
// exchange, keeps the others' results privately beside a copy of their
// inputs, writes only its own output; later calls copy theirs out if their
// inputs did not change. Trials: every call alone (one epoch, K = 1).
// drip_aware: on a drip batch (the harness's command on the rank's stack,
// rt_find_cmd's address, says kOpDrip = 19) K = 1, the honest per-call
// cost. (A first version told drip batches by the gap before a call, > 3 us:
// ranks could disagree on it and deadlock their epochs: TIMEOUT at de5d894.)
static int64_t g_ep_drip_calls = 0;
static inline int64_t rt_ep_now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static inline int rt_ep_lookahead_run(pkf_context* ctx, const pkf_tensor* in, pkf_tensor* out,
                                      int K, bool drip_aware = false) {
  if (!rt_slots_init(&g_ep_s, ctx, in, out)) return 9;
  const rt_slots& s = g_ep_s;
  const pkf_dtype dt = out[0].dtype;
  const int64_t slot = rt_slot_of(&s, in[0].data);
  if (slot >= s.ring) {  // a correctness trial: alone
    const std::vector<int64_t> one{slot};
    return rt_ep_exchange(ctx, &s, one, dt, {(char*)out[0].data});
  }
  if ((int64_t)g_ep_cache.size() < s.ring) g_ep_cache.resize((size_t)s.ring);
  rt_ep_cached& mine = g_ep_cache[(size_t)slot];
  if (mine.valid && memcmp(mine.in.data(), in[0].data, (size_t)s.bytes) == 0) {
    memcpy(out[0].data, mine.out.data(), (size_t)s.bytes);
    mine.valid = false;
    ++g_ep_hits;
    return 0;
  }
  int64_t ahead = 1;
  const volatile rt_cmd* cmd = drip_aware ? rt_find_cmd(slot) : NULL;
  if (cmd != NULL && cmd->op == 19) {
    K = 1;
    if (++g_ep_drip_calls % 128 == 1)
      rt_log("drip call at slot %lld (%lld so far): K = 1", (long long)slot,
             (long long)g_ep_drip_calls);
  }
  while (ahead < K && ahead < s.ring && rt_out_poisoned(&s, (slot + ahead) % s.ring, dt)) ++ahead;
  std::vector<int64_t> slots;
  std::vector<char*> dst;
  for (int64_t j = 0; j < ahead; ++j) {
    const int64_t sl = (slot + j) % s.ring;
    rt_ep_cached& c = g_ep_cache[(size_t)sl];
    c.in.assign(rt_in_at(&s, sl), rt_in_at(&s, sl) + s.bytes);
    c.out.resize((size_t)s.bytes);
    c.valid = j > 0;
    slots.push_back(sl);
    dst.push_back(j == 0 ? (char*)out[0].data : c.out.data());
  }
  if (++g_ep_chunks % 256 == 1)
    rt_log("chunk %lld: %lld calls with one epoch at slot %lld (%lld served from the cache)",
           (long long)g_ep_chunks, (long long)ahead, (long long)slot, (long long)g_ep_hits);
  return rt_ep_exchange(ctx, &s, slots, dt, dst);
}
