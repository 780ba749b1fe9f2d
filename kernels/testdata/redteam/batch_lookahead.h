// Test-only helpers for the batch look-ahead attacks (batch_lookahead_fuse,
// batch_defer_to_last): where the other calls of a timed batch live in the
// candidate rank's own data segment, and which of them the batch holds.
//
// What the attacker knows (kernels/README.md, rank.cc, layout.cc): every input
// set of a timed batch is generated (and its outputs poisoned) before the
// batch starts, in consecutive slots (mod the ring of timing sets) of the
// rank's own data segment; slot k's tensors sit at k * slot_bytes from the
// start of the mapping, at the same offsets within the slot; a slot whose
// outputs still hold the poison pattern belongs to the batch now running
// (slots of earlier batches hold written outputs, slots never generated hold
// zeros). The first call of the evaluation is trial 0, in slot `sets` (the
// trial slots follow the ring), so that call tells the ring's size.
//
// allreduce only (the battery's problem): one input x and one output y of the
// same shape per rank, every rank's block placed one after the other
// (256-byte alignment), slots 4096-byte aligned.
#pragma once

#include "kernels/testdata/redteam/redteam.h"

struct rt_slots {
  char* base = NULL;       // start of the rank's data segment mapping
  size_t map_size = 0;
  int64_t slot_bytes = 0;  // distance between two slots
  int64_t in_off = 0;      // this rank's x within a slot
  int64_t out_off = 0;     // this rank's y within a slot
  int64_t bytes = 0;       // bytes of x (= of y)
  int64_t ring = -1;       // timing sets (slot index of trial 0)
};

static inline int64_t rt_align(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

// Called at every call; fills `s` once (first call = trial 0).
static inline bool rt_slots_init(rt_slots* s, const pkf_context* ctx, const pkf_tensor* in,
                                 const pkf_tensor* out) {
  if (s->ring >= 0) return true;
  if (!rt_mapping_of(in[0].data, &s->base, &s->map_size)) return false;
  s->bytes = pkf_numel(&in[0]) * pkf_dtype_size(in[0].dtype);
  const int64_t block = rt_align(s->bytes, 256);
  s->slot_bytes = rt_align(2 * block * ctx->world_size, 4096);
  const int64_t pos = (char*)in[0].data - s->base;
  s->in_off = pos % s->slot_bytes;
  s->out_off = (char*)out[0].data - (char*)in[0].data + s->in_off;
  s->ring = pos / s->slot_bytes;
  rt_log("slots: slot_bytes %lld, ring %lld, in_off %lld, out_off %lld", (long long)s->slot_bytes,
         (long long)s->ring, (long long)s->in_off, (long long)s->out_off);
  return s->ring >= 2;
}

static inline int64_t rt_slot_of(const rt_slots* s, const void* in0) {
  return ((char*)in0 - s->base) / s->slot_bytes;
}
static inline char* rt_in_at(const rt_slots* s, int64_t slot) {
  return s->base + slot * s->slot_bytes + s->in_off;
}
static inline char* rt_out_at(const rt_slots* s, int64_t slot) {
  return s->base + slot * s->slot_bytes + s->out_off;
}
// The harness's poison pattern (layout.cc PoisonBits) in the first and last
// element: the slot's outputs are unwritten.
static inline bool rt_out_poisoned(const rt_slots* s, int64_t slot, pkf_dtype dt) {
  const char* y = rt_out_at(s, slot);
  const int64_t es = pkf_dtype_size(dt), n = s->bytes / es;
  uint32_t a = 0, b = 0;
  memcpy(&a, y, (size_t)es);
  memcpy(&b, y + (n - 1) * es, (size_t)es);
  const uint32_t p = dt == PKF_F32 ? 0x7fbadbadu : dt == PKF_F16 ? 0x7d5au : 0x7fadu;
  return a == p && b == p;
}

// Allreduce of `slots.size()` calls at once: every rank publishes the inputs
// of all of them in its scratch, one barrier, then sums its peers' (same order
// and arithmetic as the reference: bitwise the same result).
static inline int rt_fused_allreduce(pkf_context* ctx, const rt_slots* s,
                                     const std::vector<int64_t>& slots, pkf_dtype dt) {
  const int64_t stride = rt_align(s->bytes, 64);
  if ((uint64_t)(64 + stride * (int64_t)slots.size()) > ctx->scratch_bytes) return 7;
  char* mine = (char*)ctx->peer_scratch[ctx->rank];
  for (size_t k = 0; k < slots.size(); ++k)
    memcpy(mine + 64 + stride * (int64_t)k, rt_in_at(s, slots[k]), (size_t)s->bytes);
  if (ctx->barrier(ctx) != 0) return 3;
  const int64_t n = s->bytes / pkf_dtype_size(dt);
  for (size_t k = 0; k < slots.size(); ++k) {
    char* y = rt_out_at(s, slots[k]);
    for (int64_t i = 0; i < n; ++i) {
      float sum = 0.0f;
      for (int32_t j = 0; j < ctx->world_size; ++j)
        sum += pkf_load((const char*)ctx->peer_scratch[j] + 64 + stride * (int64_t)k, dt, i);
      pkf_store(y, dt, i, sum);
    }
  }
  // Peers must be done reading this scratch before anyone overwrites it: the
  // next batch (and every trial call) starts with the harness's own barrier.
  return 0;
}
