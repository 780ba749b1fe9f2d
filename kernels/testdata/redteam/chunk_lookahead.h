// Test-only helpers for the round-4 batch attacks (lookahead_private_*,
// defer_chunk_cmd, irq_storm_ref): chunked exchanges over several calls of a
// timed batch, a private result cache, and the rank harness's own command
// (read from the rank's stack).
//
// What the attacker knows (rank.cc, protocol.h, batch_lookahead.h):
// - every input set of a timed batch exists (outputs poisoned) before the
//   batch's first call, in consecutive slots of the rank's own data segment;
// - the harness keeps the command it is executing (`Cmd cmd`, a local of
//   Rank::Main whose address escapes into ReadFull, so it lives in memory) on
//   the rank's stack for the whole batch: magic, op (kOpBatch = 11), first
//   slot, count, ring. A call finds its own index in the batch from its
//   input pointer's slot, and the batch's end from `count`.
// - a batch starts with one harness barrier and none between its calls.
//
// allreduce only (the battery's problem), like batch_lookahead.h.
#pragma once

#include <vector>

#include "kernels/testdata/redteam/batch_lookahead.h"

// ---- the harness's command, from the rank's stack ---------------------------
struct rt_cmd {
  uint32_t magic, op, slot, count, ring, flags;
  uint64_t seed;
};
static const uint32_t kRtMagic = 0x504b4631, kRtOpRun = 3, kRtOpBatch = 11;

// Finds the harness's Cmd above this frame (once; its address never changes:
// a local of the rank's main loop). `slot` = the slot this call runs on.
static inline const volatile rt_cmd* rt_find_cmd(int64_t slot) {
  static const volatile rt_cmd* found = NULL;
  if (found != NULL) return found;
  char* base = NULL;
  size_t size = 0;
  char* here = (char*)__builtin_frame_address(0);
  if (!rt_mapping_of(here, &base, &size)) return NULL;
  for (char* p = (char*)((uintptr_t)here & ~(uintptr_t)7); p + sizeof(rt_cmd) <= base + size;
       p += 4) {
    const rt_cmd* c = (const rt_cmd*)p;
    if (c->magic != kRtMagic || (c->op != kRtOpRun && c->op != kRtOpBatch)) continue;
    if (c->slot != (uint32_t)slot || c->count < 1 || c->count > 1024) continue;
    found = c;
    rt_log("harness Cmd found on the stack %lld bytes above pkf_run's frame (op %u slot %u count %u)",
           (long long)(p - here), c->op, c->slot, c->count);
    break;
  }
  return found;
}

// ---- one exchange for several calls ------------------------------------------
// Every rank publishes the inputs of all `slots` in its scratch (two buffers
// used alternately, in the upper half of the scratch), crosses ONE barrier
// and sums its peers' (the reference's order and arithmetic: bitwise the
// same). The barrier of chunk c+1 is crossed by a rank only after it finished
// reading chunk c, so chunk c+2 may reuse chunk c's buffer; every batch
// starts with the harness's own barrier. Results go to `dst[k]` (an output,
// or private memory).
static uint64_t rt_chunks = 0;
static inline int rt_chunk_exchange(pkf_context* ctx, const rt_slots* s,
                                    const std::vector<int64_t>& slots, pkf_dtype dt,
                                    const std::vector<char*>& dst) {
  const int64_t stride = rt_align(s->bytes, 64);
  const int64_t quarter = (int64_t)(ctx->scratch_bytes / 4) / 64 * 64;
  if (stride * (int64_t)slots.size() > quarter) return 7;
  const int64_t off = 2 * quarter + (int64_t)(rt_chunks % 2) * quarter;
  ++rt_chunks;
  char* mine = (char*)ctx->peer_scratch[ctx->rank] + off;
  for (size_t k = 0; k < slots.size(); ++k)
    memcpy(mine + stride * (int64_t)k, rt_in_at(s, slots[k]), (size_t)s->bytes);
  if (ctx->barrier(ctx) != 0) return 3;
  const int64_t n = s->bytes / pkf_dtype_size(dt);
  for (size_t k = 0; k < slots.size(); ++k) {
    for (int64_t i = 0; i < n; ++i) {
      float sum = 0.0f;
      for (int32_t j = 0; j < ctx->world_size; ++j)
        sum += pkf_load((const char*)ctx->peer_scratch[j] + off + stride * (int64_t)k, dt, i);
      pkf_store(dst[k], dt, i, sum);
    }
  }
  return 0;
}

// ---- look-ahead into private memory --------------------------------------------
// Call i of a timed batch that finds no result of its own in the cache
// computes calls i..i+K-1 (those of them still in this batch: outputs still
// poison) with one exchange, keeps their results in private memory next to
// a copy of the inputs they were computed from, and writes only its own
// output. Each later call copies its cached result into its own output (if
// its inputs are unchanged), so every output is written by its own call and
// nothing is written ahead: poison_at_start has nothing to see.
// K = 0: K = the judge's short-batch length, max(16, B/4) (judge.cc Timing),
// B learnt from the longest batch seen: short batches are then exactly one
// chunk, long ones four, and per call both cost alike (batch_consistency).
struct rt_cached {
  bool valid = false;
  std::vector<char> in, out;
};
static rt_slots g_la_s;
static std::vector<rt_cached> g_la_cache;
static int64_t g_la_longest = 0, g_la_hits = 0, g_la_chunks = 0;

static inline int rt_lookahead_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in,
                                   pkf_tensor* out, int32_t n_out, void* stream, int K) {
  if (!rt_slots_init(&g_la_s, ctx, in, out))
    return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  const rt_slots& s = g_la_s;
  const pkf_dtype dt = out[0].dtype;
  const int64_t slot = rt_slot_of(&s, in[0].data);
  if (slot >= s.ring) return pkf_run_correct(ctx, in, n_in, out, n_out, stream);  // a trial
  if ((int64_t)g_la_cache.size() < s.ring) g_la_cache.resize((size_t)s.ring);
  rt_cached& mine = g_la_cache[(size_t)slot];
  if (mine.valid && memcmp(mine.in.data(), in[0].data, (size_t)s.bytes) == 0) {
    memcpy(out[0].data, mine.out.data(), (size_t)s.bytes);
    mine.valid = false;
    ++g_la_hits;
    return 0;
  }
  // The calls still ahead in this batch: consecutive slots whose outputs
  // are still poison.
  int64_t ahead = 1;
  while (ahead < s.ring && rt_out_poisoned(&s, (slot + ahead) % s.ring, dt)) ++ahead;
  g_la_longest = std::max(g_la_longest, ahead);
  const int64_t k = K > 0 ? K : std::max<int64_t>(16, g_la_longest / 4);
  const int64_t m = std::min(ahead, k);
  std::vector<int64_t> slots;
  std::vector<char*> dst;
  for (int64_t j = 0; j < m; ++j) {
    const int64_t sl = (slot + j) % s.ring;
    rt_cached& c = g_la_cache[(size_t)sl];
    c.in.assign(rt_in_at(&s, sl), rt_in_at(&s, sl) + s.bytes);
    c.out.resize((size_t)s.bytes);
    c.valid = j > 0;
    slots.push_back(sl);
    dst.push_back(j == 0 ? (char*)out[0].data : c.out.data());
  }
  if (++g_la_chunks % 64 == 1)
    rt_log("chunk %lld: %lld calls with one exchange at slot %lld (K %lld; %lld calls served "
           "from the private cache so far)",
           (long long)g_la_chunks, (long long)m, (long long)slot, (long long)k,
           (long long)g_la_hits);
  return rt_chunk_exchange(ctx, &s, slots, dt, dst);
}
