// Test-only (cuda): where a timed batch's other calls are, for the batch
// look-ahead attacks (batch_fuse_group, defer_to_last_group). What the
// attacker knows (rank_cuda.cc): one cudaMalloc holds every slot of the rank,
// slot k at k * slot_bytes, inputs first in a slot; the trials use the slots
// after the ring of timing sets, the first timed batch starts at slot 0, and
// batch j+1 starts right after batch j (mod the ring). Calls of a batch come
// back to back (enqueue only), batches are milliseconds apart: the first gap
// tells the batch size B, fixed for the whole timing phase.
#pragma once

#include <time.h>

#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"

static inline long long bg_now_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

struct bg_state {
  char* trial0 = nullptr;   // input of the first call (trial 0, slot = ring)
  char* trial1 = nullptr;   // input of the second call (slot ring + 1)
  char* base = nullptr;     // input of the first timed call (slot 0)
  long long stride = 0;     // slot bytes
  long long ring = 0;
  long long in_to_out = 0;  // out - in within a slot
  long long calls = 0;      // calls seen
  long long last_ns = 0;    // when the previous call returned
  long long batch = 0;      // B, once known
  long long in_batch = 0;   // calls of the current batch so far (first = 1)
  long long batch_start = 0;
};

// Updates the state for this call; returns true when it is a timed call
// whose batch size is known (the caller may then fuse).
static inline bool bg_track(bg_state* s, const pkf_tensor* in, const pkf_tensor* out) {
  char* x = (char*)in[0].data;
  const long long now = bg_now_ns();
  const bool gap = s->last_ns == 0 || now - s->last_ns > 500000;
  ++s->calls;
  if (s->calls == 1) {
    s->trial0 = x;
    s->in_to_out = (char*)out[0].data - x;
    return false;
  }
  if (s->calls == 2) {
    s->trial1 = x;
    s->stride = s->trial1 - s->trial0;
    return false;
  }
  if (s->stride <= 0) return false;
  if (s->base == nullptr) {
    if (x >= s->trial0) return false;  // still a trial slot (the determinism re-run)
    s->base = x;                        // the first timed batch starts at slot 0
    s->ring = (s->trial0 - s->base) / s->stride;
    s->in_batch = 1;
    s->batch_start = 0;
    return false;
  }
  if (gap) {
    if (s->batch == 0) s->batch = s->in_batch;  // the first batch ended: B
    s->in_batch = 1;
    s->batch_start = (x - s->base) / s->stride;
  } else {
    ++s->in_batch;
  }
  return s->batch > 0;
}
static inline void bg_returned(bg_state* s) { s->last_ns = bg_now_ns(); }

// World size 1: the allreduce of one rank is a copy; one kernel copies the
// outputs of all `n` slots (one launch for the whole batch).
__global__ void bg_copy_slots(char* base, long long first, long long n, long long ring,
                              long long stride, long long in_to_out, long long bytes) {
  for (long long k = blockIdx.y; k < n; k += gridDim.y) {
    const char* x = base + ((first + k) % ring) * stride;
    char* y = (char*)x + in_to_out;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < bytes;
         i += (long long)gridDim.x * blockDim.x)
      y[i] = x[i];
  }
}

// The allreduces of `n` consecutive slots (mod the ring) from `first`: one
// NCCL group (NCCL aggregates a group's operations), or one copy kernel at
// world size 1.
static inline int bg_group(pkf_context* ctx, const bg_state* s, long long first, long long n,
                           const pkf_tensor* out, cudaStream_t st) {
  if (ctx->world_size == 1) {
    const long long bytes = (long long)pkf_bytes(&out[0]);
    bg_copy_slots<<<dim3(4, (unsigned)(n < 1024 ? n : 1024)), 256, 0, st>>>(
        s->base, first, n, s->ring, s->stride, s->in_to_out, bytes);
    return cudaGetLastError() == cudaSuccess ? 0 : 14;
  }
  if (ncclGroupStart() != ncclSuccess) return 11;
  for (long long k = 0; k < n; ++k) {
    char* x = s->base + ((first + k) % s->ring) * s->stride;
    if (ncclAllReduce(x, x + s->in_to_out, pkf_n(&out[0]), pkf_t(out[0].dtype), ncclSum,
                      (ncclComm_t)ctx->nccl, st) != ncclSuccess) {
      ncclGroupEnd();
      return 12;
    }
  }
  return ncclGroupEnd() == ncclSuccess ? 0 : 13;
}
